"""The store URLs' timeout parameters: defaults added, the caller's values kept, bad ones refused
with a StoreError that says what to give."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from session_migrator import StoreError
from session_migrator.store import open_store
from session_migrator.store._postgres_conn import LIBPQ_DEFAULTS, split_url


def _query(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query))


def test_postgres_defaults_are_added_and_the_callers_values_win() -> None:
    url, statement = split_url("postgresql://u@h/db")
    assert statement == 30.0
    assert _query(url) == {**LIBPQ_DEFAULTS, "options": "-c statement_timeout=30000"}
    assert "%20" in url  # (libpq does not read '+' as a space)
    url, statement = split_url(
        "postgresql://u@h/db?connect_timeout=2&statement_timeout=1.5&options=-c%20work_mem=4MB"
    )
    query = _query(url)
    assert statement == 1.5
    assert query["connect_timeout"] == "2"
    assert query["options"] == "-c work_mem=4MB -c statement_timeout=1500"
    url, statement = split_url("postgresql://u@h/db?statement_timeout=0")
    assert statement == 0
    assert "options" not in _query(url)


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_bad_statement_timeout_is_refused(value: str) -> None:
    with pytest.raises(StoreError, match="give seconds >= 0"):
        open_store(f"postgresql://u@127.0.0.1:1/db?statement_timeout={value}")


def test_a_bad_redis_timeout_is_refused() -> None:
    with pytest.raises(StoreError, match="socket_timeout"):
        open_store("redis://127.0.0.1:1/0?socket_timeout=soon")
