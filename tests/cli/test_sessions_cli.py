"""``session-migrator sessions ...`` end to end, on a real SQLite store in the test's tmp dir."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from session_migrator import ContentPart, Message, ToolCall
from session_migrator.cli import main
from session_migrator.store import open_store

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What's the weather in Paris?", "name": "ann"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "Sunny, 21°C — 東京 is rainy"},
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "Sunny and 21°C."}],
        "refusal": None,
        "custom": {"kept": [1, 2]},
    },
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


@pytest.fixture
def conversation_file(tmp_path: Path) -> Path:
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps(CONVERSATION, ensure_ascii=False), encoding="utf-8")
    return path


def test_import_list_show_export_round_trip(
    capsys: pytest.CaptureFixture[str], store_url: str, conversation_file: Path, tmp_path: Path
) -> None:
    s = ("--store", store_url)
    code, out, _ = run(
        capsys,
        "sessions",
        "import",
        str(conversation_file),
        "--session-id",
        "chat-1",
        "--workspace",
        "team",
        *s,
    )
    assert code == 0
    assert "appended 5 of 5" in out
    again = ("sessions", "import", str(conversation_file), "--session-id", "chat-1", *s, "--json")
    code, out, _ = run(capsys, *again)
    assert json.loads(out)["appended"] == 5  # messages without ids: appended as sent
    with open_store(store_url) as store:
        store.delete_messages("chat-1", [m.id for m in store.load("chat-1")][5:])
    key = ("sessions", "import", str(conversation_file), "--session-id", "k", *s, "--json")
    code, out, _ = run(capsys, *key, "--idempotency-key", "batch-1")
    assert json.loads(out)["appended"] == 5
    code, out, _ = run(capsys, *key, "--idempotency-key", "batch-1")
    assert json.loads(out)["appended"] == 0  # the same batch under the same key: a retry
    code, out, _ = run(capsys, "sessions", "delete", "k", *s)
    assert code == 0

    code, out, _ = run(capsys, "sessions", "list", "--workspace", "team", *s)
    assert code == 0
    assert "chat-1" in out
    assert "1 session(s) in workspace 'team'" in out
    code, out, _ = run(capsys, "sessions", "list", *s)  # the default workspace is empty
    assert "No sessions" in out
    code, out, _ = run(capsys, "sessions", "list", "--all", "--json", *s)
    listed = json.loads(out)
    assert listed["count"] == 1
    assert listed["sessions"][0]["message_count"] == 5

    code, out, _ = run(capsys, "sessions", "show", "chat-1", *s)
    assert code == 0
    assert "-> weather" in out
    assert "Sunny and 21°C." in out
    code, out, _ = run(capsys, "sessions", "show", "chat-1", "--json", *s)
    shown = json.loads(out)
    assert shown["count"] == 5
    assert [m["role"] for m in shown["messages"]] == [m["role"] for m in CONVERSATION]

    exported = tmp_path / "out.json"
    code, out, err = run(capsys, "sessions", "export", "chat-1", "-o", str(exported), *s)
    assert code == 0
    assert err == ""
    assert "wrote 5 messages" in out
    data = json.loads(exported.read_text(encoding="utf-8"))
    assert [{k: v for k, v in m.items() if k != "id"} for m in data] == CONVERSATION

    code, out, _ = run(capsys, "sessions", "import", str(exported), "--session-id", "copy", *s)
    assert code == 0
    with open_store(store_url) as store:
        assert store.load("copy") == store.load("chat-1")


def test_native_export_is_exact_where_openai_is_not(
    capsys: pytest.CaptureFixture[str], store_url: str, tmp_path: Path
) -> None:
    odd = [
        Message("user", (ContentPart("text", "no original dict"),), id="u1"),
        Message(
            "assistant",
            "",
            tool_calls=(ToolCall("c", "f", "{}"),),
            id="a1",
            extra={"role": "shadowed key"},
        ),
        Message("tool", "ok", tool_call_id="c", id="t1"),
    ]
    with open_store(store_url) as store:
        store.append("odd", odd, workspace="w", metadata={"user_id": "u-7"})
    code, _out, err = run(capsys, "sessions", "export", "odd", "--store", store_url)
    assert code == 0
    assert "warning: 2 message(s)" in err
    assert "--format native" in err
    native = tmp_path / "native.json"
    code, _, err = run(
        capsys,
        "sessions",
        "export",
        "odd",
        "--format",
        "native",
        "-o",
        str(native),
        "--store",
        store_url,
    )
    assert code == 0
    assert err == ""
    other = f"sqlite:///{tmp_path / 'other.db'}"
    code, _, _ = run(capsys, "sessions", "import", str(native), "--store", other)
    assert code == 0
    with open_store(other) as store:
        assert store.load("odd") == odd  # every field, exactly
        info = store.get_session("odd")
        assert info is not None
        assert (info.workspace, dict(info.metadata)) == ("w", {"user_id": "u-7"})


def _long_conversation(path: Path) -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You help."}]
    for i in range(40):
        messages.append({"role": "user", "content": f"Question {i}: " + "tell me more " * 20})
        messages.append({"role": "assistant", "content": f"Answer {i}: " + "here is more " * 30})
    path.write_text(json.dumps(messages), encoding="utf-8")


def test_show_fitted_to_a_model_with_usage(
    capsys: pytest.CaptureFixture[str], store_url: str, tmp_path: Path
) -> None:
    source = tmp_path / "long.json"
    _long_conversation(source)
    s = ("--store", store_url)
    assert run(capsys, "sessions", "import", str(source), "--session-id", "long", *s)[0] == 0
    code, out, _ = run(capsys, "sessions", "show", "long", "--model", "gpt-4o", *s)
    assert code == 0
    assert "Usage for gpt-4o:" in out
    assert "exact" in out
    assert "The whole session fits." in out
    fit = ("--model", "gpt-4o", "--context-window", "3000", "--strategy", "trim")
    code, out, _ = run(capsys, "sessions", "show", "long", *fit, *s)
    assert code == 0
    assert "does not fit" not in out
    assert "Fitted with trim: compressed" in out
    code, out, _ = run(capsys, "sessions", "show", "long", *fit, "--json", *s)
    data = json.loads(out)
    assert data["total"] == data["count"] < 81
    assert data["usage"]["tokens"] <= data["usage"]["budget"] < data["usage"]["session_tokens"]
    assert data["report"]["decision"] == "compressed"
    with open_store(store_url) as store:
        info = store.get_session("long")
        assert info is not None
        assert info.message_count == 81  # fitting never changes the stored session


def test_delete_erase_purge(
    capsys: pytest.CaptureFixture[str], store_url: str, conversation_file: Path
) -> None:
    s = ("--store", store_url)
    for sid, ws in (("a", "w1"), ("b", "w1"), ("c", "w2")):
        run(
            capsys,
            "sessions",
            "import",
            str(conversation_file),
            "--session-id",
            sid,
            "--workspace",
            ws,
            *s,
        )
    code, out, _ = run(capsys, "sessions", "delete", "a", "--tool", "weather", *s)
    assert code == 0
    assert "deleted 2 message(s)" in out
    with open_store(store_url) as store:
        ids = [m.id for m in store.load("a")]
        store.set_metadata("c", {"user_id": "zoe"})
    code, out, _ = run(capsys, "sessions", "delete", "a", "--message", ids[0], "--json", *s)
    assert json.loads(out) == {"session_id": "a", "deleted_messages": 1, "unpaired": []}
    code, out, _ = run(capsys, "sessions", "delete", "a", "--range", ids[1], ids[2], *s)
    assert "deleted 2 message(s)" in out
    code, out, _ = run(capsys, "sessions", "delete", "a", *s)
    assert "deleted session 'a'" in out
    code, out, _ = run(capsys, "sessions", "erase", "--user", "zoe", *s)
    assert "erased 1 session(s) of user 'zoe'" in out
    code, out, _ = run(capsys, "sessions", "purge", "--older-than", "0", "--json", *s)
    assert json.loads(out)["purged_messages"] == 5
    code, out, _ = run(capsys, "sessions", "list", "--all", "--json", *s)
    assert json.loads(out)["count"] == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["sessions", "show", "nope"], "No session 'nope'"),
        (["sessions", "export", "nope"], "No session 'nope'"),
        (["sessions", "delete", "nope"], "No session 'nope'"),
        (["sessions", "show", "x", "--strategy", "trim"], "--strategy needs --model"),
        (["sessions", "import", "missing.json", "--session-id", "x"], "no such file"),
        (["sessions", "purge", "--older-than", "-1"], "--older-than"),
    ],
)
def test_user_mistakes_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], store_url: str, argv: list[str], message: str
) -> None:
    code, _out, err = run(capsys, *argv, "--store", store_url)
    assert code == 2
    assert message in err
    assert "Traceback" not in err
    if "No session" in message:  # the advice names this store, and every workspace
        assert f"`session-migrator sessions list --all --store {store_url}`" in err


def test_bad_store_url_and_bad_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, store_url: str
) -> None:
    code, _, err = run(capsys, "sessions", "list", "--store", "mysql://x/y")
    assert code == 2
    assert "accepted: memory://" in err
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "wizard", "content": "x"}]', encoding="utf-8")
    code, _, err = run(
        capsys, "sessions", "import", str(bad), "--session-id", "x", "--store", store_url
    )
    assert code == 2
    assert "role" in err
    code, _, err = run(capsys, "sessions", "import", str(bad), "--store", store_url)
    assert code == 2


def test_store_variable_is_the_default(
    capsys: pytest.CaptureFixture[str],
    store_url: str,
    conversation_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SESSION_MIGRATOR_STORE", store_url)
    run(capsys, "sessions", "import", str(conversation_file), "--session-id", "env")
    with open_store(store_url) as store:
        assert len(store.load("env")) == 5


def test_entry_point_runs_the_sessions_command(store_url: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "session_migrator",
            "sessions",
            "list",
            "--all",
            "--json",
            "--store",
            store_url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["count"] == 0


def test_turns_imported_one_file_at_a_time_keep_repeated_words(
    capsys: pytest.CaptureFixture[str], store_url: str, tmp_path: Path
) -> None:
    """A file that continues a session is appended after it: the user saying "continue" again
    is a new message; importing the same file twice under its idempotency key stores it once.
    """
    turns = [
        [
            {"role": "user", "content": "Run the tests."},
            {"role": "assistant", "content": "3 failed."},
        ],
        [
            {"role": "user", "content": "continue"},
            {"role": "assistant", "content": "Fixed test_a."},
        ],
        [
            {"role": "user", "content": "continue"},
            {"role": "assistant", "content": "Fixed test_b."},
        ],
    ]
    s = ("--store", store_url)
    for k, turn in enumerate(turns):
        path = tmp_path / f"turn{k}.json"
        path.write_text(json.dumps(turn))
        for _ in range(2):  # the second import of the same file under its key adds nothing
            code, _, _ = run(
                capsys, "sessions", "import", str(path), "--session-id", "a1", "--idempotency-key",
                path.name, *s,
            )  # fmt: skip
            assert code == 0
    code, out, _ = run(capsys, "sessions", "export", "a1", *s)
    assert code == 0
    exported = json.loads(out)
    stored = exported["messages"] if isinstance(exported, dict) else exported
    assert [(m["role"], m["content"]) for m in stored] == [
        (m["role"], m["content"]) for turn in turns for m in turn
    ]


def test_import_into_another_workspace_is_refused_not_ignored(
    capsys: pytest.CaptureFixture[str], store_url: str, conversation_file: Path
) -> None:
    s = ("--store", store_url)
    imported = ("sessions", "import", str(conversation_file), "--session-id", "w1")
    assert run(capsys, *imported, "--workspace", "team-a", *s)[0] == 0
    code, out, err = run(capsys, *imported, "--workspace", "team-b", *s)
    assert code == 2
    assert out == ""
    assert "session 'w1' is in workspace 'team-a', not 'team-b'" in err
    assert "leave it out to append" in err
    # the same workspace, or none, appends (here: nothing new)
    assert run(capsys, *imported, "--workspace", "team-a", *s)[0] == 0
    assert run(capsys, *imported, *s)[0] == 0
    code, out, _ = run(capsys, "sessions", "list", "--all", "--json", *s)
    listed = json.loads(out)
    sessions = listed["sessions"] if isinstance(listed, dict) else listed
    assert [(x["id"], x["workspace"]) for x in sessions] == [("w1", "team-a")]


def test_deleting_one_side_of_a_tool_pair_says_what_is_left_unpaired(
    capsys: pytest.CaptureFixture[str], store_url: str, conversation_file: Path
) -> None:
    s = ("--store", store_url)
    assert (
        run(capsys, "sessions", "import", str(conversation_file), "--session-id", "t", *s)[0] == 0
    )
    stored = open_store(store_url).load("t")
    call = next(m for m in stored if m.tool_calls)
    result = next(m for m in stored if m.role == "tool")
    code, out, _ = run(capsys, "sessions", "delete", "t", "--message", call.id, *s)
    assert code == 0
    assert f"1 message(s) lost their tool call or results ({result.id})" in out
    assert "left out of what a model is sent" in out
    # what a model is sent has no orphan; the result stays stored
    shown = ("sessions", "show", "t", "--model", "gpt-4o", "--strategy", "auto", "--json")
    code, out, _ = run(capsys, *shown, *s)
    fitted = json.loads(out)
    assert [m["role"] for m in fitted["messages"]] == ["system", "user", "assistant"]
    assert fitted["report"]["dropped_ids"] == [result.id]
    assert result.id in [m.id for m in open_store(store_url).load("t")]
    code, out, _ = run(capsys, "sessions", "delete", "t", "--message", result.id, "--json", *s)
    assert json.loads(out)["unpaired"] == []


def test_erase_an_integer_user_and_one_models_vectors(
    capsys: pytest.CaptureFixture[str], store_url: str
) -> None:
    from session_migrator.recall._embeddings import text_digest

    s = ("--store", store_url)
    with open_store(store_url) as store:
        store.append("a", [Message("user", "hello", id="m1")], metadata={"user_id": 42})
        store.append("b", [Message("user", "hi", id="m1")], metadata={"user_id": 7})
        store.put_vectors("b", "Old:model", {"m1": text_digest("hi") + b"\0" * 8})
    code, out, _ = run(capsys, "sessions", "erase", "--vectors", "Old:model", "--json", *s)
    assert code == 0
    assert json.loads(out) == {"erased_vectors": 1, "model_key": "Old:model"}
    code, out, _ = run(capsys, "sessions", "erase", "--user", "42", *s)
    assert "erased 1 session(s) of user '42'" in out
    with open_store(store_url) as store:
        assert [i.id for i in store.list_sessions(None)] == ["b"]
        assert store.get_vectors("b", "Old:model", ["m1"]) == {}
        assert [m.text for m in store.load("b")] == ["hi"]  # the messages stay
