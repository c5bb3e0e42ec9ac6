"""Run llama-index-core's own tests for ChatMemoryBuffer, ChatSummaryMemoryBuffer and Memory
against our classes: every test that passes with upstream's classes must pass with ours, except
the by-design differences below (also listed in docs/llamaindex.md). The upstream tests are never
copied into this repository.

    python scripts/llamaindex_peer_suites.py [TESTS_DIR]   # exit 1 when one of ours fails

This is a script, not part of ``make test``: llama-index-core publishes its tests in neither its
sdist nor its wheel, and its source repository cannot be reached from the test machines, so a
test would only ever skip. (langchain-core's sdist has its tests: tests/adapters/langchain/
test_peer_suite.py runs them in ``make test``.)

Where the tests come from, first found:

1. ``SESSION_MIGRATOR_PEER_TESTS``: a folder holding llama-index-core's ``tests/`` (e.g. a
   checkout of run-llama/llama_index's ``llama-index-core`` at the installed version's tag);
2. the installed version's sdist (``pip download --no-deps --no-binary :all:``), if it has them.

The sdist of llama-index-core 0.14.25 has no tests (605 files, all under ``llama_index/``) and
its wheel has none either, so (1) is needed. A suite of :data:`SUITES` missing there (an older
checkout) is named on stderr and not run; the others run, with a line of figures per file.
``SESSION_MIGRATOR_STORE`` is removed from the runs' environment: a memory made without a store
is private, as upstream's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

SUITES = (
    "memory/test_chat_memory_buffer.py",
    "memory/test_chat_summary_memory_buffer.py",
    "memory/test_memory_base.py",
    "memory/test_memory_blocks_base.py",
    "memory/test_memory_custom_chat_store.py",
)

#: Upstream tests that cannot pass with ours by design, with the reason.
BY_DESIGN: dict[str, str] = {}

_OUR_CONFTEST = textwrap.dedent(
    """
    import pytest
    import llama_index.core.memory as memory_package
    import llama_index.core.memory.chat_memory_buffer as chat_memory_buffer
    import llama_index.core.memory.chat_summary_memory_buffer as chat_summary_memory_buffer
    import llama_index.core.memory.memory as memory_module

    from llamaindex_session_migrator import FittedMemory, SessionMigratorMemory

    for module, name, ours in (
        (chat_memory_buffer, "ChatMemoryBuffer", SessionMigratorMemory),
        (chat_summary_memory_buffer, "ChatSummaryMemoryBuffer", SessionMigratorMemory),
        (memory_module, "Memory", FittedMemory),
        (memory_package, "ChatMemoryBuffer", SessionMigratorMemory),
        (memory_package, "ChatSummaryMemoryBuffer", SessionMigratorMemory),
        (memory_package, "Memory", FittedMemory),
    ):
        setattr(module, name, ours)


    @pytest.fixture(autouse=True)
    def _own_store(tmp_path, monkeypatch):
        monkeypatch.setenv("SESSION_MIGRATOR_HOME", str(tmp_path))
    """
)


def _from_sdist(folder: Path) -> Path | None:
    wanted = f"llama-index-core=={version('llama-index-core')}"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
         ":all:", wanted, "-d", str(folder)],
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"pip download {wanted} failed (PyPI is needed): {done.stderr[-2000:]}")
    for archive in folder.glob("llama_index_core-*.tar.gz"):
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if "/tests/" in m.name]
            if not members:
                return None
            tar.extractall(folder, members=members, filter="data")
        return next(folder.glob("*/tests"), None)
    return None


def _upstream_tests(folder: Path, given: str | None) -> Path:
    given = given or os.environ.get("SESSION_MIGRATOR_PEER_TESTS")
    if given:
        tests = Path(given)
        if not any((tests / suite).exists() for suite in SUITES):
            raise SystemExit(
                f"{given} holds none of the suites ({', '.join(SUITES)}): give llama-index-core's "
                "tests/ folder"
            )
        return tests
    found = _from_sdist(folder)
    if found is None:
        raise SystemExit(
            f"llama-index-core {version('llama-index-core')}'s sdist and wheel carry no tests: "
            "give a folder with its tests/ (a checkout of run-llama/llama_index's "
            "llama-index-core at the installed version's tag)"
        )
    return found


def _environment() -> dict[str, str]:
    """This environment without a default store (a memory made without one is private)."""
    return {k: v for k, v in os.environ.items() if k != "SESSION_MIGRATOR_STORE"}


def _run(tests: Path, work: Path, conftest: str | None) -> dict[str, str]:
    """Each test's outcome (``passed``, ``failed``, ``skipped``), by ``file::name``."""
    work.mkdir()
    (work / "pytest.ini").write_text("[pytest]\nasyncio_mode = strict\n")
    if conftest is not None:
        (work / "conftest.py").write_text(conftest)
    for suite in SUITES:
        if (tests / suite).exists():
            target = work / Path(suite).name
            target.write_text((tests / suite).read_text())
    report = work / "report.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         f"--junitxml={report}", "--rootdir", str(work), str(work)],
        cwd=work, capture_output=True, text=True, timeout=600, check=False,
        env={**_environment(), "SESSION_MIGRATOR_HOME": str(work / "home")},
    )  # fmt: skip
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}.py::{case.get('name')}"
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            outcomes[name] = "failed"
        else:
            outcomes[name] = "skipped" if "skipped" in kinds else "passed"
    return outcomes


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tests = _upstream_tests(work / "download", argv[0] if argv else None)
        upstream = _run(tests, work / "upstream", None)
        ours = _run(tests, work / "ours", _OUR_CONFTEST)
    missing = [suite for suite in SUITES if not (tests / suite).exists()]
    for suite in missing:
        print(f"missing from {tests}: {suite} (not run)", file=sys.stderr)
    passing = sorted(t for t, outcome in upstream.items() if outcome == "passed")
    if not passing:
        print("no upstream test passed with upstream's own classes", file=sys.stderr)
        return 1
    lost = [t for t in passing if ours.get(t) != "passed" and t not in BY_DESIGN]
    for suite in SUITES:
        name = Path(suite).name
        if suite in missing:
            continue
        theirs = [t for t in upstream if t.startswith(f"{name}::")]
        kept = [t for t in passing if t.startswith(f"{name}::")]
        print(
            f"{name}: upstream classes pass {len(kept)} of {len(theirs)}; ours pass "
            f"{sum(ours.get(t) == 'passed' for t in kept)} of those"
        )
    print(
        f"upstream classes: {len(passing)} of {len(upstream)} pass; ours: "
        f"{sum(ours.get(t) == 'passed' for t in passing)} of those"
        + (f" ({len(missing)} of {len(SUITES)} suites missing)" if missing else "")
    )
    for test in lost:
        print(f"passes with upstream's classes, not with ours: {test}", file=sys.stderr)
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
