"""A Redis server that keeps nothing across a restart gets a word when a store opens on it."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from session_migrator import StoreDurabilityWarning
from session_migrator.store import open_store
from tests.store._servers import RedisServer

pytestmark = pytest.mark.redis


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, RedisServer]]:
    tmp_path = tmp_path_factory.mktemp("redis")
    started = {
        "volatile": RedisServer(tmp_path / "v", "--save", "", "--appendonly", "no"),
        "aof": RedisServer(tmp_path / "a", "--save", "", "--appendonly", "yes"),
        "rdb": RedisServer(tmp_path / "r", "--save", "60 1", "--appendonly", "no"),
        "no-config": RedisServer(
            tmp_path / "n", "--save", "", "--appendonly", "no", "--rename-command", "CONFIG", ""
        ),
    }
    yield started
    for server in started.values():
        server.stop()


def test_a_server_that_keeps_nothing_is_named_when_the_store_opens(
    servers: dict[str, RedisServer],
) -> None:
    with pytest.warns(StoreDurabilityWarning, match="keeps nothing across a restart") as caught:
        open_store(servers["volatile"].url).close()
    assert len(caught) == 1
    assert str(servers["volatile"].port) in str(caught[0].message)
    assert caught[0].filename == __file__  # points at the caller's open_store line


@pytest.mark.parametrize("kind", ["aof", "rdb", "no-config"])
def test_a_server_that_persists_or_hides_its_config_says_nothing(
    servers: dict[str, RedisServer], kind: str
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        store = open_store(servers[kind].url)
    store.append("s", [])
    store.close()
