"""Every Python snippet in the README and the docs runs, as a reader would run it.

The ``python`` blocks of one page run in order in one fresh interpreter (a later block may use
what an earlier one defined), in an empty folder, with the user's state (``SESSION_MIGRATOR_HOME``)
in a temporary directory and no API keys: offline, as the page promises. Blocks marked otherwise
(``bash``, ``console``, ``text``, ``json``, ...) are not Python and are not run here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)

RUNNER = """
import json, sys, traceback
blocks = json.loads(sys.stdin.read())
scope = {"__name__": "__main__"}
for line, code in blocks:
    try:
        exec(compile(code, f"{sys.argv[1]}:{line}", "exec"), scope)
    except BaseException:
        traceback.print_exc()
        print(f"the snippet at {sys.argv[1]} line {line} failed", file=sys.stderr)
        sys.exit(1)
"""


def snippets(page: Path) -> list[tuple[int, str]]:
    """``(line, code)`` of each ``python`` block of ``page``, in order."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in FENCE.finditer(text)]


def test_the_pages_have_snippets() -> None:
    assert snippets(ROOT / "README.md"), "the README shows how to adopt it in Python"
    # the harness finds what it should: a page with two blocks yields both, in order
    assert [c for _, c in FENCE_SAMPLE] == ["x = 1\n", "assert x == 1\n"]


SAMPLE = "```python\nx = 1\n```\n\n```bash\nls\n```\n```python\nassert x == 1\n```\n"
FENCE_SAMPLE = [(0, m.group(1)) for m in FENCE.finditer(SAMPLE)]


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_python_snippet_runs(page: Path, tmp_path: Path) -> None:
    blocks = snippets(page)
    if not blocks:
        return
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_TOKEN")) and not k.startswith("SESSION_MIGRATOR_")
    }
    env["SESSION_MIGRATOR_HOME"] = str(tmp_path / "home")
    env["PYTHONPATH"] = str(ROOT)
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, page.relative_to(ROOT).as_posix()],
        input=json.dumps(blocks),
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
