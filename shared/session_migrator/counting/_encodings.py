"""Offline loading of tiktoken encodings.

tiktoken downloads its encodings on first use; these machines (and many deployments) have no
network. The encoding files are looked up, in order, in:

1. ``$TIKTOKEN_CACHE_DIR`` (or ``$DATA_GYM_CACHE_DIR``), tiktoken's own cache override;
2. tiktoken's default cache, ``<tmp>/data-gym-cache``;
3. the copies bundled with llama-index-core (``llama_index/core/_static/tiktoken_cache``),
   found through package metadata, without importing llama_index.

Files are named by the sha1 of their download URL, as tiktoken names them, and checked against
tiktoken's published sha256 before use. The environment is read, never written. Encodings are
built lazily, once, under a lock. When no file can be found, :func:`get_encoding` returns ``None``
and callers fall back to an estimate.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import os
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

__all__ = ["ENCODINGS", "encoding_search_paths", "get_encoding"]

_BASE_URL = "https://openaipublic.blob.core.windows.net/encodings/"
_ENDOFTEXT = "<|endoftext|>"
_ENDOFPROMPT = "<|endofprompt|>"

# pat_str, special tokens and file hashes as published in tiktoken_ext.openai_public (MIT).
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PAT = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""  # noqa: E501

#: name -> (sha256 of the file, pat_str, special tokens)
ENCODINGS: dict[str, tuple[str, str, dict[str, int]]] = {
    "o200k_base": (
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PAT,
        {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
    "cl100k_base": (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PAT,
        {
            _ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
}

_lock = threading.Lock()
_cache: dict[str, tiktoken.Encoding | None] = {}


def _cache_key(name: str) -> str:
    return hashlib.sha1(f"{_BASE_URL}{name}.tiktoken".encode()).hexdigest()


def encoding_search_paths() -> list[Path]:
    """The folders searched for encoding files, in order."""
    paths: list[Path] = []
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        value = os.environ.get(var)
        if value:
            paths.append(Path(value))
            break
    paths.append(Path(tempfile.gettempdir()) / "data-gym-cache")
    try:
        dist = importlib.metadata.distribution("llama-index-core")
    except importlib.metadata.PackageNotFoundError:
        pass
    else:
        static = dist.locate_file("llama_index/core/_static/tiktoken_cache")
        paths.append(Path(str(static)))
    return paths


def _load_ranks(name: str) -> dict[bytes, int] | None:
    expected_sha256 = ENCODINGS[name][0]
    key = _cache_key(name)
    for folder in encoding_search_paths():
        candidate = folder / key
        try:
            data = candidate.read_bytes()
        except OSError:
            continue
        if hashlib.sha256(data).hexdigest() != expected_sha256:
            continue
        return {
            base64.b64decode(token): int(rank)
            for token, rank in (line.split() for line in data.splitlines() if line)
        }
    return None


def get_encoding(name: str) -> tiktoken.Encoding | None:
    """The tiktoken encoding ``name`` built from a local file, or ``None`` if none is found."""
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; known: {', '.join(sorted(ENCODINGS))}")
    try:
        return _cache[name]
    except KeyError:
        pass
    with _lock:
        if name in _cache:
            return _cache[name]
        import tiktoken

        ranks = _load_ranks(name)
        encoding = None
        if ranks is not None:
            _, pat_str, special = ENCODINGS[name]
            encoding = tiktoken.Encoding(
                name=name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=special
            )
        _cache[name] = encoding
        return encoding


def _reset_cache() -> None:
    """Forget built encodings (tests use it to exercise the fallback)."""
    with _lock:
        _cache.clear()
