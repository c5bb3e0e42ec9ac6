"""Session stores: the full conversation log, kept whatever is sent to a model.

Open one by URL (``memory://``, ``sqlite:///path.db``, ``redis://host:6379/0``,
``postgresql://user@host/db``) with :func:`open_store`; every backend satisfies the
:class:`SessionStore` protocol (sync and ``a``-prefixed async methods) and passes one contract
test suite. :func:`usage` shows how much of a model's input budget a session takes.

>>> from session_migrator import Message
>>> from session_migrator.store import open_store
>>> with open_store("memory://") as store:
...     store.append("chat-1", [Message("user", "Hello", id="m1")], workspace="team-a")
...     [s.id for s in store.list_sessions("team-a")]
1
['chat-1']
"""

from session_migrator.store._base import BaseSessionStore
from session_migrator.store._facts import (
    UserFact,
    delete_user_fact,
    learn_user_facts,
    set_user_fact,
    user_facts,
)
from session_migrator.store._open import open_store
from session_migrator.store._protocol import SessionStore
from session_migrator.store._related import arelated_sessions, related_sessions
from session_migrator.store._types import (
    MessageNotFoundError,
    MigrationRecord,
    NotOffloadedError,
    SessionInfo,
    StoredSummary,
)
from session_migrator.store._usage import Usage, usage
from session_migrator.store._user_messages import user_messages

__all__ = [
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
