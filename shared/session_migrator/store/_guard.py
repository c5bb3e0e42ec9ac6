"""The one place where every store method checks its ids and translates backend errors.

:class:`~session_migrator.store.BaseSessionStore` wraps each public method of the
:class:`~session_migrator.store.SessionStore` protocol, in itself and in every backend that
defines one (``__init_subclass__``), so no backend can forget either:

- the ids a method takes (``session_id``, ``workspace``, ``user_id``) must be non-empty strings
  (a ``user_id`` may also be an integer),
  else :class:`~session_migrator.InvalidIdError` (``list_sessions(None)`` means every workspace);
- an error of the backend's driver (the class's ``backend_errors``: ``sqlite3.Error``,
  ``redis.RedisError``, ``psycopg.Error``) becomes a :class:`~session_migrator.StoreError`
  naming the store and the method, with the driver's error as its ``__cause__``.

The async twins run the sync methods, so they are covered too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from session_migrator._errors import InvalidIdError

__all__ = ["GUARDED", "check_id", "guard_class"]

F = TypeVar("F", bound=Callable[..., Any])


class IdArg(NamedTuple):
    """An id argument: its name, its position after ``self``, and whether ``None`` is allowed."""

    name: str
    position: int
    none_ok: bool = False
    int_ok: bool = False  # (a user id: an integer is its decimal string)


_SESSION = (IdArg("session_id", 0),)

#: The guarded methods and the id arguments each takes.
GUARDED: dict[str, tuple[IdArg, ...]] = {
    "append": (IdArg("session_id", 0), IdArg("workspace", 99)),
    "load": _SESSION,
    "load_since": _SESSION,
    "load_around": _SESSION,
    "get_session": _SESSION,
    "set_metadata": _SESSION,
    "list_sessions": (IdArg("workspace", 0, none_ok=True),),
    "delete_messages": _SESSION,
    "delete_range": _SESSION,
    "delete_by_tool": _SESSION,
    "delete_session": _SESSION,
    "erase_workspace": (IdArg("workspace", 0),),
    "erase_user": (IdArg("user_id", 0, int_ok=True),),
    "purge_older_than": (),
    "get_summary": _SESSION,
    "put_summary": _SESSION,
    "get_token_counts": _SESSION,
    "put_token_counts": _SESSION,
    "get_vectors": _SESSION,
    "put_vectors": _SESSION,
    "delete_vectors": (),
    "log_migration": (),  # (its record's session_id is checked by the method)
    "migrations": _SESSION,
    "get_offloaded": _SESSION,
    "acquire_lease": (IdArg("session_id", 0), IdArg("name", 1), IdArg("owner", 2)),
    "release_lease": (IdArg("session_id", 0), IdArg("name", 1), IdArg("owner", 2)),
    "close": (),
}


def check_id(value: object, what: str) -> str:
    """``value`` if it is a non-empty string, else :class:`~session_migrator.InvalidIdError`."""
    if not isinstance(value, str) or not value:
        raise InvalidIdError(what, value)
    return value


def _guarded(method: F, ids: tuple[IdArg, ...]) -> F:
    name = method.__name__

    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        for arg in ids:
            if arg.name in kwargs:
                value = kwargs[arg.name]
            elif arg.position < len(args):
                value = args[arg.position]
            else:
                continue  # its default
            if arg.int_ok and isinstance(value, int) and not isinstance(value, bool):
                continue  # (a user id given as a number: see ``normal_user_id``)
            if not (arg.none_ok and value is None):
                check_id(value, arg.name)
        try:
            return method(self, *args, **kwargs)
        except self.backend_errors as exc:
            raise self.store_error(name, exc) from exc

    run.__store_guarded__ = True  # type: ignore[attr-defined]
    return run  # type: ignore[return-value]


def guard_class(cls: type) -> None:
    """Wrap the guarded methods ``cls`` defines itself (once each)."""
    for name, ids in GUARDED.items():
        method = cls.__dict__.get(name)
        if callable(method) and not getattr(method, "__store_guarded__", False):
            setattr(cls, name, _guarded(method, ids))
