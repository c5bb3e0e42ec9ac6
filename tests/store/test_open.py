"""``open_store``: URL schemes, the default location, options, and lazy optional imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from session_migrator import Message, MissingDependencyError, StoreError
from session_migrator.store import open_store
from session_migrator.store._memory import MemoryStore
from session_migrator.store._sqlite import SQLiteStore


def test_memory_store_is_new_each_time() -> None:
    a, b = open_store("memory://"), open_store("memory://")
    assert isinstance(a, MemoryStore)
    a.append("s", [Message("user", "hi")])
    assert b.list_sessions() == []


def test_default_is_sqlite_under_the_home(tmp_path: Path) -> None:
    with open_store() as store:
        assert isinstance(store, SQLiteStore)
        assert store.path == tmp_path / "sm-home" / "sessions.db"  # SESSION_MIGRATOR_HOME
        store.append("s", [Message("user", "hi")])
    assert (tmp_path / "sm-home" / "sessions.db").is_file()


def test_home_argument_and_store_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store(home=tmp_path / "elsewhere") as store:
        assert isinstance(store, SQLiteStore)
        assert store.path == tmp_path / "elsewhere" / "sessions.db"
    monkeypatch.setenv("SESSION_MIGRATOR_STORE", "memory://")
    assert isinstance(open_store(), MemoryStore)


def test_sqlite_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with open_store("sqlite:///rel/dir/s.db") as store:
        assert isinstance(store, SQLiteStore)
        assert store.path == Path("rel/dir/s.db")
    assert (tmp_path / "rel" / "dir" / "s.db").is_file()
    absolute = tmp_path / "abs.db"
    with open_store(f"sqlite:///{absolute}") as store:
        assert isinstance(store, SQLiteStore)
        assert store.path == absolute
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with open_store("sqlite:///~/tilde.db") as store:
        assert isinstance(store, SQLiteStore)
        assert store.path == tmp_path / "home" / "tilde.db"


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("mysql://localhost/db", "accepted: memory://, sqlite:///"),
        ("sessions.db", "accepted"),
        ("", "empty"),
        ("sqlite://relative.db", "three slashes"),
        ("sqlite:///:memory:", "memory://"),
        ("sqlite:///", "names no file"),
        ("memory://named", "no path"),
    ],
)
def test_bad_urls_say_what_is_accepted(url: str, match: str) -> None:
    with pytest.raises(StoreError, match=match):
        open_store(url)


def test_unknown_options_are_named() -> None:
    with pytest.raises(StoreError, match="does not take prefix"):
        open_store("memory://", prefix="x")
    with pytest.raises(StoreError, match="offload_threshold"):
        open_store("memory://", offload_threshold=-1)


def test_unreachable_servers_fail_with_a_clear_error() -> None:
    with pytest.raises(StoreError, match="cannot connect to Redis"):
        open_store("redis://127.0.0.1:1/0")
    with pytest.raises(StoreError, match="PostgreSQL") as info:
        open_store("postgresql://postgres:secret@127.0.0.1:1/db")
    assert "secret" not in str(info.value)


def test_a_newer_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    open_store(f"sqlite:///{path}").close()
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES ('9999_from_the_future', 0)")
    conn.close()
    with pytest.raises(StoreError, match="newer session-migrator"):
        open_store(f"sqlite:///{path}")


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_importing_the_core_does_not_import_drivers() -> None:
    result = _run(
        """
        import sys
        import session_migrator, session_migrator.store
        from session_migrator.store import open_store
        open_store("memory://").close()
        loaded = [m for m in ("redis", "psycopg") if m in sys.modules]
        print("loaded:", loaded)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "loaded: []" in result.stdout


@pytest.mark.parametrize(
    ("module", "url", "extra"),
    [("redis", "redis://127.0.0.1:6379/0", "redis"), ("psycopg", "postgresql://x/y", "postgres")],
)
def test_a_missing_driver_names_the_extra(module: str, url: str, extra: str) -> None:
    result = _run(
        f"""
        import sys
        sys.modules[{module!r}] = None  # the driver is not installed
        from session_migrator import MissingDependencyError
        from session_migrator.store import open_store
        try:
            open_store({url!r})
        except MissingDependencyError as exc:
            print("install:", exc.install)
        """
    )
    assert result.returncode == 0, result.stderr
    assert f"install: pip install 'session-migrator[{extra}]'" in result.stdout
    assert issubclass(MissingDependencyError, ImportError)


def test_the_public_surface_is_pinned() -> None:
    import session_migrator.store as store_package

    assert store_package.__all__ == [
        "BaseSessionStore",
        "MessageNotFoundError",
        "MigrationRecord",
        "NotOffloadedError",
        "SessionInfo",
        "SessionStore",
        "StoredSummary",
        "Usage",
        "UserFact",
        "arelated_sessions",
        "delete_user_fact",
        "learn_user_facts",
        "open_store",
        "related_sessions",
        "set_user_fact",
        "usage",
        "user_facts",
        "user_messages",
    ]
    for name in store_package.__all__:
        assert getattr(store_package, name).__module__.startswith("session_migrator.store.")


def test_a_store_whose_folder_cannot_be_made_is_a_store_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from session_migrator.cli import main

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    url = f"sqlite:///{blocker / 'sub' / 'x.db'}"
    with pytest.raises(StoreError, match=r"cannot open the SQLite store .*Not a directory"):
        open_store(url)
    assert main(["sessions", "list", "--store", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot open the SQLite store")
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("hidden", "package", "extra"),
    [
        ("llama_index", "llamaindex_session_migrator", "llamaindex"),
        ("langchain_core", "langchain_session_migrator", "langchain"),
    ],
)
def test_an_adapter_without_its_framework_names_the_extra(
    hidden: str, package: str, extra: str
) -> None:
    result = _run(
        f"""
        import sys
        sys.modules[{hidden!r}] = None  # the framework is not installed
        sys.modules[{hidden + ".core"!r}] = None
        from session_migrator import MissingDependencyError
        try:
            import {package}
        except MissingDependencyError as exc:
            print("install:", exc.install)
        """
    )
    assert result.returncode == 0, result.stderr
    assert f"install: pip install 'session-migrator[{extra}]'" in result.stdout
