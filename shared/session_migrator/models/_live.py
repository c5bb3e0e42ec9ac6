"""Live model facts: windows fetched from provider endpoints and cached on disk.

Never required: without a cache every lookup goes to the bundled table, as before. With one,
:func:`lookup_cached` sits between explicit overrides and the bundled table (``_models`` calls
it with a normalised name).

Sources, detected from the URL and the answer's shape unless ``kind`` is given:

- ``openai`` / ``vllm``: an OpenAI-compatible ``GET /v1/models`` whose ``data[]`` items state a
  window (vLLM's ``max_model_len``; other servers' ``context_length``, ``context_window`` or
  ``max_context_length``);
- ``openrouter``: ``GET /api/v1/models``: ``context_length`` and
  ``top_provider.max_completion_tokens``;
- ``ollama``: ``GET /api/tags`` then ``POST /api/show`` per model: ``num_ctx`` from the model's
  ``parameters`` when set, else ``model_info["<arch>.context_length"]``.

A bare base URL (``http://host:8000``) is tried as ``/v1/models``, then as Ollama. The cache,
``data_home()/model_cache.json``, keeps each source's raw model ids, facts, kind and fetch time;
a refresh replaces only the sources that answered, so a failed source keeps its earlier entries
and a failed refresh keeps the whole previous file. Writes are atomic. Windows from the cache
have ``source="cache:<url>"`` and ``as_of=<fetch date>``; when several sources know a model,
the most recently fetched wins (within one source, the id that normalises to itself, then the
smallest window). After :data:`DEFAULT_TTL` the cache still answers, and a one-line hint
(a ``session_migrator.live`` log warning, once per process and cache file; also
:func:`stale_hint`) suggests ``session-migrator models refresh``. Names are normalised with
``_model_names.normalize_model_name``, as the lookup does, when the file is loaded.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from session_migrator._config import data_home
from session_migrator.models._live_sources import KINDS, FetchError, as_int, fetch_source
from session_migrator.models._names import normalize_model_name
from session_migrator.models._tokenizers import infer_tokenizer
from session_migrator.models._windows import ModelWindow

__all__ = [
    "CACHE_FILE",
    "DEFAULT_SOURCES",
    "DEFAULT_TTL",
    "KINDS",
    "RefreshResult",
    "SourceResult",
    "cache_path",
    "is_stale",
    "lookup_cached",
    "refresh",
    "stale_hint",
]

CACHE_FILE = "model_cache.json"
DEFAULT_TTL = timedelta(days=7)
#: Refreshed when no URL is given and the cache names no source yet (public, no key needed).
DEFAULT_SOURCES: tuple[str, ...] = ("https://openrouter.ai/api/v1/models",)

_log = logging.getLogger("session_migrator.live")


@dataclass(frozen=True, slots=True)
class SourceResult:
    """What one source gave: ``models`` windows found, ``skipped`` ids that stated none."""

    url: str
    kind: str
    ok: bool
    models: int = 0
    skipped: tuple[str, ...] = ()
    error: str | None = None
    fetched_at: str | None = None


@dataclass(frozen=True, slots=True)
class RefreshResult:
    """The outcome of :func:`refresh`: one :class:`SourceResult` per URL, and the cache file."""

    sources: tuple[SourceResult, ...]
    path: Path

    @property
    def ok(self) -> bool:
        """At least one source answered and the cache was written."""
        return any(s.ok for s in self.sources)

    @property
    def models_found(self) -> int:
        return sum(s.models for s in self.sources)

    @property
    def errors(self) -> tuple[str, ...]:
        return tuple(f"{s.url}: {s.error}" for s in self.sources if not s.ok)


def cache_path() -> Path:
    """The cache file: ``data_home() / "model_cache.json"``."""
    return data_home() / CACHE_FILE


# -- the cache file ------------------------------------------------------------------------------


def _read_sources(path: Path) -> dict[str, dict[str, Any]]:
    """The ``sources`` of the cache file; a missing or corrupt file is empty (logged)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        _log.warning("ignoring unreadable model cache %s: %s", path, exc)
        return {}
    sources = raw.get("sources") if isinstance(raw, dict) else None
    if not isinstance(sources, dict):
        return {}
    return {
        str(url): src
        for url, src in sources.items()
        if isinstance(src, dict)
        and isinstance(src.get("models"), dict)
        and isinstance(src.get("fetched_at"), str)
    }


def _write_sources(path: Path, sources: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".model_cache-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"version": 1, "sources": sources}, fh, indent=1, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def refresh(
    urls: Sequence[str] | None = None,
    *,
    kind: str | None = None,
    timeout: float = 10.0,
    api_key: str | None = None,
) -> RefreshResult:
    """Fetch model windows from ``urls`` and merge them into the on-disk cache.

    ``urls`` defaults to the sources already in the cache, else :data:`DEFAULT_SOURCES`.
    ``kind`` (one of :data:`KINDS`) skips detection; ``api_key`` is sent as a bearer token to
    every source. Never raises for a source's failure: each URL gets a :class:`SourceResult`
    with its error, and its earlier cache entries stay. The file is rewritten (atomically)
    only when at least one source answered.
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if isinstance(urls, str):
        urls = [urls]
    path = cache_path()
    sources = _read_sources(path)
    targets = list(urls) if urls is not None else (list(sources) or list(DEFAULT_SOURCES))
    results: list[SourceResult] = []
    updated: dict[str, dict[str, Any]] = {}
    for url in dict.fromkeys(u.strip().rstrip("/") for u in targets if u.strip()):
        previous_kind = sources.get(url, {}).get("kind")
        use_kind = kind or (previous_kind if previous_kind in KINDS else None)
        try:
            found_kind, entries, skipped = fetch_source(
                url, use_kind, timeout=timeout, api_key=api_key
            )
        except FetchError as exc:
            results.append(SourceResult(url, use_kind or "auto", False, error=str(exc)))
            continue
        fetched_at = datetime.now(UTC).isoformat()
        updated[url] = {"kind": found_kind, "fetched_at": fetched_at, "models": entries}
        results.append(
            SourceResult(url, found_kind, True, len(entries), tuple(skipped), None, fetched_at)
        )
    if updated:
        try:  # re-read: another process may have refreshed other sources meanwhile
            _write_sources(path, {**_read_sources(path), **updated})
        except OSError as exc:
            error = f"could not write the model cache {path}: {exc}"
            results = [
                SourceResult(r.url, r.kind, False, error=error) if r.ok else r for r in results
            ]
    return RefreshResult(tuple(results), path)


# -- lookup --------------------------------------------------------------------------------------


class _Cache:
    """The loaded cache: the index by normalised name and each source's fetch time."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.stamp: tuple[int, int, int] | None = None
        self.index: dict[str, tuple[ModelWindow, str]] = {}
        self.fetched: dict[str, datetime] = {}
        self.hinted = False


_cache = _Cache()
_cache_lock = threading.Lock()


def _build(sources: Mapping[str, Mapping[str, Any]]) -> _Cache:
    built = _Cache()
    ranks: dict[str, tuple[datetime, bool, int, str]] = {}
    for url, src in sources.items():
        try:
            fetched = datetime.fromisoformat(src["fetched_at"])
        except ValueError:
            continue
        if fetched.tzinfo is None:
            fetched = fetched.replace(tzinfo=UTC)
        built.fetched[url] = fetched
        kind = str(src.get("kind", ""))
        for model_id, facts in src["models"].items():
            window_size = as_int(facts.get("context_window")) if isinstance(facts, dict) else None
            if window_size is None:
                continue
            model_id = str(model_id)
            try:
                name = normalize_model_name(model_id)
            except Exception:  # a server's id the normaliser cannot read
                continue
            rank = (fetched, model_id.rsplit("/", 1)[-1].lower() == name, -window_size, url)
            if name in ranks and ranks[name] >= rank:
                continue
            ranks[name] = rank
            max_input = as_int(facts.get("max_input_tokens")) or window_size
            window = ModelWindow(
                name=name,
                provider=str(facts.get("provider") or kind or "unknown"),
                context_window=window_size,
                max_input_tokens=min(max_input, window_size),
                max_output_tokens=as_int(facts.get("max_output_tokens")),
                tokenizer=infer_tokenizer(model_id),
                source=f"cache:{url}",
                as_of=fetched.date().isoformat(),
            )
            built.index[name] = (window, url)
    return built


def _loaded() -> _Cache:
    """The cache for the current data home, re-read only when its file changed."""
    path = cache_path()
    try:
        st = path.stat()
        stamp: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        stamp = None
    global _cache
    with _cache_lock:
        if path != _cache.path or stamp != _cache.stamp:
            fresh = _build(_read_sources(path)) if stamp is not None else _Cache()
            fresh.path, fresh.stamp = path, stamp
            _cache = fresh
        return _cache


def lookup_cached(name: str) -> ModelWindow | None:
    """The cached live window for a normalised model name, or ``None`` (no cache, not listed).

    Cheap: one ``stat`` per call; the file is parsed again only when it changed. A window from
    a source older than :data:`DEFAULT_TTL` is still returned, and the refresh hint is logged
    (once per process and cache file).
    """
    cache = _loaded()
    hit = cache.index.get(name)
    if hit is None:
        return None
    window, url = hit
    if not cache.hinted and _older_than(cache.fetched.get(url), DEFAULT_TTL, None):
        cache.hinted = True
        hint = stale_hint()
        if hint:
            _log.warning("%s", hint)
    return window


def _older_than(fetched: datetime | None, ttl: timedelta, now: datetime | None) -> bool:
    return fetched is not None and (now or datetime.now(UTC)) - fetched > ttl


def is_stale(ttl: timedelta = DEFAULT_TTL, *, now: datetime | None = None) -> bool:
    """Whether any cached source was fetched more than ``ttl`` ago (``False`` with no cache)."""
    return any(_older_than(f, ttl, now) for f in _loaded().fetched.values())


def stale_hint(ttl: timedelta = DEFAULT_TTL, *, now: datetime | None = None) -> str | None:
    """A one-line suggestion to refresh when :func:`is_stale`, else ``None``."""
    fetched = _loaded().fetched.values()
    stale = [f for f in fetched if _older_than(f, ttl, now)]
    if not stale:
        return None
    oldest = min(stale)
    days = ((now or datetime.now(UTC)) - oldest).days
    return (
        f"the live model cache is {days} days old (fetched {oldest.date().isoformat()}); "
        "run `session-migrator models refresh` for fresh context windows"
    )
