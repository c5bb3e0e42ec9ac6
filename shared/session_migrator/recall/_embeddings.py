"""A user's embedding model behind one interface: :class:`Embeddings`.

Recall ranks the cut turns by bm25; given an embedding model (``embeddings=`` on
:func:`~session_migrator.migrate`, :class:`~session_migrator.SessionFitter`, the adapters), it
also ranks them by cosine similarity to the question and fuses the two rankings (see
:mod:`session_migrator.recall._hybrid`). Three kinds of model are taken as they are, with no
import of their framework here:

- any callable from a list of texts to a list of vectors (``name=`` gives its model key);
- a LangChain ``Embeddings`` (``embed_documents`` / ``embed_query``; the ``a``-prefixed async
  forms when the sync ones are not implemented);
- a LlamaIndex ``BaseEmbedding`` (``get_text_embedding_batch`` / ``get_query_embedding``).

Each model has a stable :attr:`Embeddings.key` (the class, and its model name and dimensions
where it has them; or the ``name`` given): the store keeps a message's vector under its id and
that key, so a vector is never read back for another model.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import inspect
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal, Protocol

from session_migrator.messages._messages import Message

__all__ = [
    "DEFAULT_EMBEDDING_TIMEOUT",
    "DIGEST_BYTES",
    "EMBEDDED_CHARS",
    "Embeddings",
    "StoredVectors",
    "active",
    "as_embeddings",
    "embedded_text",
    "recalling",
    "session_vectors",
    "text_digest",
]

#: Seconds a fit waits, in all, for the embedding model before recall falls back to bm25.
DEFAULT_EMBEDDING_TIMEOUT = 10.0
#: The characters of a message that are embedded (its text and tool calls, cut here): a long
#: tool output is searched by bm25 over its whole text, and by its opening here.
EMBEDDED_CHARS = 4_000

#: The bytes of the digest of the embedded text that lead each vector kept in a store.
DIGEST_BYTES = 16


def embedded_text(message: Message) -> str:
    """What of ``message`` is embedded: its text and its tool calls, cut at
    :data:`EMBEDDED_CHARS`."""
    text = " ".join([message.text] + [c.name + " " + c.arguments for c in message.tool_calls])
    return text[:EMBEDDED_CHARS]


def text_digest(text: str) -> bytes:
    """The digest of an embedded text kept before its vector in a store (BLAKE2b, 16 bytes): a
    store keeps a vector only while its message's embedded text has this digest, and recall
    serves it only then."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()


#: Texts per call to the model.
BATCH_SIZE = 128

Kind = Literal["callable", "langchain", "llamaindex"]
# the attributes a model's name or size is read from, in order
_NAME_ATTRS = ("model_name", "model", "model_id", "deployment_name", "deployment")
_SIZE_ATTRS = ("dimensions", "embed_dim", "size", "output_dimensionality")


class Embeddings:
    """An embedding model for recall (see the module docstring).

    ``source`` is a callable, a LangChain ``Embeddings`` or a LlamaIndex ``BaseEmbedding``;
    ``name`` is its model key (required for a lambda or a partial, whose own names say nothing
    stable). ``timeout`` (seconds) is one deadline per fit for every call to the model: past it,
    or when the model raises, recall ranks by bm25 alone and the report says so in
    ``fallbacks``. ``batch_size`` texts go in each call.

    Vectors are kept in memory here (``max_cached`` of them, by message id and text), so that
    :func:`~session_migrator.migrate` called again on a growing conversation embeds only the new
    messages and the question; a :class:`~session_migrator.SessionFitter` keeps them in its
    store too.

    >>> e = Embeddings(lambda texts: [[float(len(t)), 1.0] for t in texts], name="length")
    >>> e.key, e.embed_documents(["ab"]), e.embed_query("abc")
    ('length', [[2.0, 1.0]], [3.0, 1.0])
    """

    def __init__(
        self,
        source: Any,
        *,
        name: str | None = None,
        timeout: float = DEFAULT_EMBEDDING_TIMEOUT,
        batch_size: int = BATCH_SIZE,
        max_cached: int = 200_000,
    ) -> None:
        if isinstance(source, Embeddings):
            raise TypeError("source is already an Embeddings: pass it as it is")
        if name is not None and not str(name).strip():
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        if not float(timeout) > 0:
            raise ValueError(f"timeout must be seconds > 0, got {timeout!r}")
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
        self.source = source
        self.kind: Kind = _kind(source)
        self.key = name.strip() if name is not None else _model_key(source, self.kind)
        self.timeout = float(timeout)
        self.batch_size = batch_size
        self.max_cached = max_cached
        # (message id, hash of its text) -> unit vector (float32), see recall._hybrid
        self.memory: dict[tuple[str, object], Any] = {}
        self.lock = threading.Lock()

    @classmethod
    def of(cls, source: Any, *, name: str | None = None) -> Embeddings:
        """``source`` as an :class:`Embeddings`: itself if it is one, else a wrapper (the same
        one for the same model object, so that its vectors are kept between calls)."""
        return as_embeddings(source, name=name)

    def __repr__(self) -> str:
        return f"Embeddings({self.key!r}, kind={self.kind!r}, timeout={self.timeout:g})"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """The model's vectors of ``texts`` (one call), checked: one vector per text."""
        texts = list(texts)
        if not texts:
            return []
        source = self.source
        if self.kind == "llamaindex":
            out = source.get_text_embedding_batch(texts)
        elif self.kind == "langchain":
            out = _sync_or_async(source.embed_documents, source, "aembed_documents", texts)
        else:
            out = source(texts)
        return _checked(out, len(texts), self.key)

    def embed_query(self, text: str) -> list[float]:
        """The model's vector of the question ``text``."""
        source = self.source
        if self.kind == "llamaindex":
            out: Any = [source.get_query_embedding(text)]
        elif self.kind == "langchain":
            out = [_sync_or_async(source.embed_query, source, "aembed_query", text)]
        else:
            out = source([text])
        return _checked(out, 1, self.key)[0]


class VectorStore(Protocol):
    """What of a session store keeps vectors (every backend's ``get_vectors`` / ``put_vectors``;
    the store layer is above this one, so it is named by what it does)."""

    def get_vectors(self, session_id: str, model: str, ids: Any) -> dict[str, bytes]: ...

    def put_vectors(self, session_id: str, model: str, vectors: Any) -> None: ...


class StoredVectors:
    """An embedding model's vectors of one stored session: its memory first, then the store
    (``get_vectors`` / ``put_vectors``), then the model; new vectors are written back."""

    def __init__(
        self, embeddings: Embeddings, store: VectorStore | None, session_id: str | None
    ) -> None:
        self.embeddings = embeddings
        self.store = store
        self.session_id = session_id
        # (id, text digest) the store was asked for (whether it had them)
        self._asked: set[tuple[str, bytes]] = set()
        self._unsaved: set[tuple[str, bytes]] = set()  # embedded here, not in the store yet
        # every vector read here, one row each (by message id and the digest of its embedded
        # text, so a message stored again with other text gets a row of its own), so a re-fit
        # reads only new ones
        self.rows: dict[tuple[str, bytes], int] = {}
        self.digests: dict[str, tuple[Any, bytes]] = {}  # id -> (message, digest), a memo
        self.table: Any = None  # (a float32 matrix, rows beyond len(rows) unused)


def _sync_or_async(sync: Callable[[Any], Any], source: Any, name: str, arg: Any) -> Any:
    """``sync(arg)``; where only the async form is implemented, that one, on an event loop of
    this (worker) thread."""
    try:
        return sync(arg)
    except NotImplementedError:
        method = getattr(source, name, None)
        if method is None:
            raise
        result = method(arg)
        if inspect.isawaitable(result):
            return asyncio.run(_awaited(result))
        return result


async def _awaited(result: Any) -> Any:
    return await result


def _checked(out: Any, count: int, key: str) -> list[list[float]]:
    try:
        vectors = [[float(x) for x in v] for v in out]
    except TypeError as exc:
        raise TypeError(
            f"embedding model {key!r} returned {type(out).__name__}, not a list of vectors"
        ) from exc
    if len(vectors) != count:
        raise ValueError(f"embedding model {key!r} returned {len(vectors)} vectors for {count}")
    return vectors


def _kind(source: Any) -> Kind:
    if callable(getattr(source, "get_text_embedding_batch", None)) and callable(
        getattr(source, "get_query_embedding", None)
    ):
        return "llamaindex"
    if callable(getattr(source, "embed_documents", None)) and callable(
        getattr(source, "embed_query", None)
    ):
        return "langchain"
    if callable(source) and not isinstance(source, type):
        return "callable"
    raise TypeError(
        "embeddings must be a callable from a list of texts to a list of vectors, a LangChain "
        f"Embeddings or a LlamaIndex BaseEmbedding, got {type(source).__name__}"
    )


def _model_key(source: Any, kind: Kind) -> str:
    """The class and its model name and size (``"OpenAIEmbeddings:text-embedding-3-small"``),
    or a function's module and name."""
    if kind == "callable" and (inspect.isfunction(source) or inspect.ismethod(source)):
        qualname = getattr(source, "__qualname__", "")
        if "<" in qualname:  # a lambda, or a function defined in a function
            raise ValueError(
                "give the embedding function a stable name: Embeddings(fn, name='my-model') "
                "(the store keeps each vector under it)"
            )
        return f"{source.__module__}.{qualname}"
    cls = type(source)
    parts = [cls.__name__]
    for attrs in (_NAME_ATTRS, _SIZE_ATTRS):
        for attr in attrs:
            value = _attribute(source, attr)
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                parts.append(str(value))
                break
    if kind == "callable" and len(parts) == 1 and cls.__module__ in ("functools", "builtins"):
        raise ValueError(
            "give the embedding callable a stable name: Embeddings(fn, name='my-model')"
        )
    return ":".join(parts)


def _attribute(source: Any, attr: str) -> Any:
    try:
        return getattr(source, attr, None)
    except Exception:  # (a property that raises says nothing of the model)
        return None


_WRAPPED: weakref.WeakKeyDictionary[Any, Embeddings] = weakref.WeakKeyDictionary()
_WRAPPED_LOCK = threading.Lock()


def as_embeddings(source: Any, *, name: str | None = None) -> Embeddings:
    """``source`` as an :class:`Embeddings` (itself if it is one). The same model object given
    again gets the same wrapper, so its vectors are kept between calls."""
    if isinstance(source, Embeddings):
        return source
    try:
        with _WRAPPED_LOCK:
            held = _WRAPPED.get(source)
            if held is None or (name is not None and held.key != name):
                held = _WRAPPED[source] = Embeddings(source, name=name)
            return held
    except TypeError:  # not weakly referable (or not hashable): a wrapper of its own
        return Embeddings(source, name=name)


# the running fit's dense ranking (a recall._hybrid.HybridRecall), set by recalling()
_ACTIVE: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "session_migrator_hybrid", default=None
)


def active() -> Any:
    """The running fit's ``HybridRecall`` (``None``: recall by bm25 alone)."""
    return _ACTIVE.get()


@contextmanager
def recalling(hybrid: Any) -> Iterator[None]:
    """Run a fit with ``hybrid`` (a ``HybridRecall``, or ``None``) as its dense ranking."""
    token = _ACTIVE.set(hybrid)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def session_vectors(fitter: Any) -> Any:
    """A ``SessionFitter``'s vectors (a ``StoredVectors`` of its store), ``None`` without an
    embedding model."""
    embeddings = fitter.embeddings
    if embeddings is None:
        return None
    held = fitter.__dict__.get("_stored_vectors")
    if held is None or held.embeddings is not embeddings or held.store is not fitter.store:
        held = StoredVectors(embeddings, fitter.store, fitter.session_id)
        fitter.__dict__["_stored_vectors"] = held
    return held
