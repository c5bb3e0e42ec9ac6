"""The Redis store's records kept beside a session's messages: its rolling summary (written
only over the revision it was read at), the log of its migrations, the token counts of its
messages by counter (kept only for messages still stored) and its leases (``SET NX PX`` on the
server's clock). It owns :class:`RedisRecords`, that part of
:class:`~session_migrator.store._redis.RedisStore`; each write is one script (see
:mod:`._redis_scripts`), so it is atomic and refused for a session that is not stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from session_migrator._errors import SessionNotFoundError
from session_migrator.store import _codec
from session_migrator.store._base import BaseSessionStore
from session_migrator.store._codec import encode_key as ek
from session_migrator.store._codec import key_digest
from session_migrator.store._redis_schema import schema_key
from session_migrator.store._types import (
    MigrationRecord,
    StoredSummary,
    conflict_error,
    from_epoch,
    to_epoch,
)

__all__ = ["RedisRecords"]


class RedisRecords(BaseSessionStore):
    """The summary, migration log, token counts and leases of
    :class:`~session_migrator.store._redis.RedisStore` (see the module)."""

    prefix: str
    _client: Any
    _summary_script: Any
    _tokens_script: Any
    _log_script: Any
    _acquire_script: Any
    _release_script: Any

    if TYPE_CHECKING:  # (the store's)

        def _keys(self, session_id: str) -> Any: ...

        def _run(self, script: Any, keys: Sequence[str], args: Sequence[Any]) -> Any: ...

    def _put_summary(self, summary: StoredSummary, expected_revision: int) -> None:
        k = self._keys(summary.session_id)
        data = _codec.dumps(
            {
                "text": summary.text,
                "first_id": summary.first_id,
                "last_id": summary.last_id,
                "covered_count": summary.covered_count,
                "model": summary.model,
                "strategy": summary.strategy,
                "updated_at": to_epoch(summary.updated_at),
            }
        )
        reply = self._run(
            self._summary_script,
            (k.meta, k.summary),
            [expected_revision, summary.revision, data],
        )
        if int(reply[0]) == -1:
            raise SessionNotFoundError(summary.session_id)
        if int(reply[0]) == 0:
            raise conflict_error(summary.session_id, expected_revision, int(reply[1]))

    def _delete_summary(self, session_id: str) -> None:
        self._client.delete(self._keys(session_id).summary)

    def _log_migration(self, record: MigrationRecord) -> None:
        assert record.at is not None
        k = self._keys(record.session_id)
        data = _codec.dumps(
            {
                "from_model": record.from_model,
                "to_model": record.to_model,
                "tokens_before": record.tokens_before,
                "tokens_after": record.tokens_after,
                "budget": record.budget,
                "strategy": record.strategy,
                "decision": record.decision,
                "at": to_epoch(record.at),
            }
        )
        if int(self._run(self._log_script, (k.meta, k.migrations), [data])) == -1:
            raise SessionNotFoundError(record.session_id)

    def _lease_key(self, k: Any, name: str) -> str:
        return f"{self.prefix}s:{k.digest}:lease:{key_digest(name)}"

    def _acquire_lease(
        self, session_id: str, name: str, owner: str, ttl_seconds: float, now: float
    ) -> bool:
        # (the server's clock: SET NX PX)
        k = self._keys(session_id)
        keys = (k.meta, self._lease_key(k, name), k.leases, schema_key(self.prefix))
        ttl_ms = max(1, round(ttl_seconds * 1000))
        reply = int(self._run(self._acquire_script, keys, [ek(owner), ttl_ms]))
        if reply == -1:
            raise SessionNotFoundError(session_id)
        return reply == 1

    def _release_lease(self, session_id: str, name: str, owner: str) -> bool:
        k = self._keys(session_id)
        keys = (self._lease_key(k, name), k.leases)
        return int(self._run(self._release_script, keys, [ek(owner)])) == 1

    def get_summary(self, session_id: str) -> StoredSummary | None:
        found = self._client.hgetall(self._keys(session_id).summary)
        if not found:
            return None
        data = _codec.loads(found[b"data"])
        return StoredSummary(
            session_id=session_id,
            text=data["text"],
            first_id=data["first_id"],
            last_id=data["last_id"],
            covered_count=data["covered_count"],
            model=data["model"],
            strategy=data["strategy"],
            revision=int(found[b"revision"]),
            updated_at=from_epoch(data["updated_at"]),
        )

    def get_token_counts(
        self, session_id: str, counter_name: str, ids: Iterable[str]
    ) -> dict[str, int]:
        wanted = list(ids)
        if not wanted:
            return {}
        found = self._client.hmget(self._keys(session_id).tokens, [ek(mid) for mid in wanted])
        out: dict[str, int] = {}
        for mid, raw in zip(wanted, found, strict=True):
            if raw is not None:
                n = _codec.loads(raw).get(ek(counter_name))
                if n is not None:
                    out[mid] = int(n)
        return out

    def put_token_counts(
        self, session_id: str, counter_name: str, counts: Mapping[str, int]
    ) -> None:
        if not counts:
            return
        k = self._keys(session_id)
        args: list[Any] = [ek(counter_name)]
        for mid, n in counts.items():
            args += [ek(mid), int(n)]
        self._run(self._tokens_script, (k.bodies, k.tokens), args)

    def migrations(self, session_id: str) -> list[MigrationRecord]:
        rows = self._client.lrange(self._keys(session_id).migrations, 0, -1)
        out: list[MigrationRecord] = []
        for raw in rows:
            data = _codec.loads(raw)
            data["at"] = from_epoch(data["at"])
            out.append(MigrationRecord(session_id=session_id, **data))
        return out
