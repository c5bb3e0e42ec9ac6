"""Valid JSON of a shape the importers do not know (a list where the entry type belongs, a null
content block, an object where a string was): the line is skipped and counted, or the file is
refused with an ``ImportFormatError``; never another exception, and never a traceback in the CLI.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from session_migrator import ImportFormatError, messages_to_openai
from session_migrator.cli import main
from session_migrator.importers import import_claude_code, import_codex

FIXTURES = Path(__file__).parent / "fixtures"
ODD = [None, 5, 1.5, True, "", [], [1], {}, {"kind": "future"}, [None], [[]]]


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if prefix:
        yield prefix
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from _paths(value, (*prefix, index))


def _object(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


@pytest.mark.parametrize(
    ("fmt", "importer"), [("codex", import_codex), ("claude_code", import_claude_code)]
)
def test_any_field_of_any_shape_is_skipped_or_refused(
    fmt: str, importer: Any, tmp_path: Path
) -> None:
    rng = random.Random(7)
    files = sorted((FIXTURES / fmt).rglob("*.jsonl"))
    skipped = 0
    for n in range(400):
        lines = rng.choice(files).read_bytes().split(b"\n")
        parsed = [_object(line) for line in lines]
        index = rng.choice([k for k, o in enumerate(parsed) if isinstance(o, dict) and o])
        target = parsed[index]
        path = rng.choice(list(_paths(target)))
        _set(target, path, rng.choice(ODD))
        lines[index] = json.dumps(target).encode()
        mutated = tmp_path / f"{fmt}-{n}.jsonl"
        mutated.write_bytes(b"\n".join(lines))  # (the other lines as they were, bytes and all)
        try:
            result = importer(mutated)
        except ImportFormatError:
            continue
        json.dumps(messages_to_openai(list(result.session.messages)))
        skipped += result.skipped.get("malformed", 0)
    assert skipped > 0  # some lines were skipped as malformed, not crashed on


def test_an_odd_line_is_skipped_and_a_directory_import_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    good = FIXTURES / "claude_code" / "plain.jsonl"
    lines = good.read_text(encoding="utf-8").splitlines()
    odd = [json.loads(line) for line in lines if line.strip()]
    for entry in odd:
        if entry.get("type") == "assistant":
            entry["message"]["content"] = [None, *entry["message"]["content"]]
            break
    odd[0]["type"] = ["user"]
    (folder / "0-odd.jsonl").write_text("\n".join(json.dumps(o) for o in odd), encoding="utf-8")
    (folder / "1-good.jsonl").write_text(good.read_text(encoding="utf-8"), encoding="utf-8")
    store = f"sqlite:///{tmp_path / 's.db'}"
    code = main(["import", "claude-code", str(folder), "--store", store])
    captured = capsys.readouterr()
    assert code == 0
    assert "Traceback" not in captured.err
    assert "skipped: a field has a shape this importer does not know" in captured.err
    assert "from 2 file(s)" in captured.out
