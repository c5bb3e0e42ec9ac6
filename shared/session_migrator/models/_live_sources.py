"""Reading model windows from provider endpoints (used by :mod:`session_migrator.models._live`).

Every failure is a :class:`FetchError` whose message names the URL and the reason; nothing here
touches the cache. See ``_live`` for the supported sources and how they are detected.
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from session_migrator._redact import redact_secrets
from session_migrator._version import __version__

__all__ = ["KINDS", "Entries", "FetchError", "as_int", "fetch_source"]

KINDS: tuple[str, ...] = ("openai", "vllm", "openrouter", "ollama")
_MAX_BYTES = 64 * 1024 * 1024
_CONTEXT_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")
_OUTPUT_FIELDS = ("max_completion_tokens", "max_output_tokens")

_log = logging.getLogger("session_migrator.live")

#: Model id -> facts: ``context_window``, ``max_input_tokens``, ``max_output_tokens``, ``provider``.
Entries = dict[str, dict[str, Any]]


class FetchError(Exception):
    """One source could not be read; the message says where and why."""


def _http_json(url: str, *, timeout: float, api_key: str | None, body: Any = None) -> Any:
    """GET (or POST ``body``) ``url`` and decode JSON; every failure is a :class:`FetchError`."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise FetchError(f"{url}: only http and https URLs can be refreshed from")
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST")
    request.add_header("Accept", "application/json")
    request.add_header("User-Agent", f"session-migrator/{__version__}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if api_key:
        request.add_unredirected_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read(_MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        try:
            detail = exc.read(200).decode("utf-8", "replace").strip()
        except OSError:
            detail = ""
        finally:
            exc.close()
        detail = f": {' '.join(detail.split())}" if detail else ""
        raise FetchError(
            redact_secrets(f"HTTP {exc.code} {exc.reason} from {url}{detail}", api_key)
        ) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise FetchError(f"{url} did not answer within {timeout:g}s") from None
        raise FetchError(f"cannot reach {url}: {exc.reason}") from None
    except TimeoutError:
        raise FetchError(f"{url} did not answer within {timeout:g}s") from None
    except (OSError, http.client.HTTPException) as exc:
        raise FetchError(f"cannot read {url}: {str(exc) or type(exc).__name__}") from None
    if len(raw) > _MAX_BYTES:
        raise FetchError(f"{url}: the answer is larger than {_MAX_BYTES // 2**20} MiB")
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise FetchError(f"{url} did not answer JSON ({exc})") from None


def as_int(value: Any) -> int | None:
    """A positive token count from an int, an integral float or a digit string, else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) and value > 0 else None


def _first_int(item: Mapping[str, Any], fields: Iterable[str]) -> int | None:
    for field in fields:
        found = as_int(item.get(field))
        if found is not None:
            return found
    return None


def _parse_model_list(payload: Any, url: str) -> tuple[str, Entries, list[str]]:
    """Windows from an OpenAI-compatible or OpenRouter ``data[]`` list: (kind, entries, skipped)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise FetchError(f"{url}: unexpected answer (expected an object with a 'data' list)")
    items = [item for item in data if isinstance(item, dict)]
    openrouter = urlsplit(url).path.rstrip("/").endswith("/api/v1/models") or any(
        isinstance(item.get("top_provider"), dict) for item in items
    )
    vllm = any("max_model_len" in item for item in items)
    kind = "openrouter" if openrouter else "vllm" if vllm else "openai"
    entries: Entries = {}
    skipped: list[str] = []
    for index, item in enumerate(data):
        model_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(model_id, str) or not model_id.strip():
            skipped.append(f"<item {index}>")
            continue
        top = item.get("top_provider")
        top = top if isinstance(top, dict) else {}
        window = _first_int(item, _CONTEXT_FIELDS) or as_int(top.get("context_length"))
        max_input = as_int(item.get("max_input_tokens"))
        window = window or max_input
        if window is None:
            skipped.append(model_id)
            continue
        output = as_int(top.get("max_completion_tokens")) or _first_int(item, _OUTPUT_FIELDS)
        if kind == "openrouter":
            provider = model_id.split("/", 1)[0] if "/" in model_id else "openrouter"
        else:
            provider = kind if kind == "vllm" else "openai-compatible"
        entries[model_id] = {
            "context_window": window,
            "max_input_tokens": min(max_input, window) if max_input else None,
            "max_output_tokens": output,
            "provider": provider,
        }
    return kind, entries, skipped


_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def _ollama_window(show: Any) -> int | None:
    if not isinstance(show, dict):
        return None
    parameters = show.get("parameters")
    if isinstance(parameters, str):
        match = _NUM_CTX.search(parameters)
        if match:
            return as_int(match.group(1))
    info = show.get("model_info")
    if not isinstance(info, dict):
        return None
    arch = info.get("general.architecture")
    if isinstance(arch, str) and as_int(info.get(f"{arch}.context_length")):
        return as_int(info.get(f"{arch}.context_length"))
    lengths = [as_int(v) for k, v in info.items() if str(k).endswith(".context_length")]
    return min((n for n in lengths if n), default=None)


def _fetch_ollama(base: str, *, timeout: float, api_key: str | None) -> tuple[Entries, list[str]]:
    tags = _http_json(f"{base}/api/tags", timeout=timeout, api_key=api_key)
    models = tags.get("models") if isinstance(tags, dict) else None
    if not isinstance(models, list):
        raise FetchError(f"{base}/api/tags: unexpected answer (expected a 'models' list)")
    entries: Entries = {}
    skipped: list[str] = []
    for index, item in enumerate(models):
        name = (item.get("model") or item.get("name")) if isinstance(item, dict) else None
        if not isinstance(name, str) or not name:
            skipped.append(f"<item {index}>")
            continue
        try:
            show = _http_json(
                f"{base}/api/show", timeout=timeout, api_key=api_key, body={"model": name}
            )
        except FetchError as exc:
            _log.info("skipping Ollama model %s: %s", name, exc)
            skipped.append(name)
            continue
        window = _ollama_window(show)
        if window is None:
            skipped.append(name)
            continue
        entries[name] = {
            "context_window": window,
            "max_input_tokens": None,
            "max_output_tokens": None,
            "provider": "ollama",
        }
    return entries, skipped


def fetch_source(
    url: str, kind: str | None, *, timeout: float, api_key: str | None
) -> tuple[str, Entries, list[str]]:
    """Fetch one source: (kind, entries, skipped). Raises :class:`FetchError`."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    base = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    if kind == "ollama" or (kind is None and re.search(r"/api/(tags|show)$", path)):
        root = re.sub(r"/api(/(tags|show))?$", "", url.rstrip("/"))
        entries, skipped = _fetch_ollama(root, timeout=timeout, api_key=api_key)
        if not entries:
            raise FetchError(f"{root}: no Ollama model states a context length")
        return "ollama", entries, skipped
    if path.endswith("/models"):
        endpoints = [url]
    elif path.endswith(("/v1", "/api/v1")):
        endpoints = [f"{url.rstrip('/')}/models"]
    elif kind == "openrouter":
        endpoints = [f"{base}/api/v1/models"]
    else:
        endpoints = [f"{url.rstrip('/')}/v1/models"]
    problems: list[str] = []
    for endpoint in endpoints:
        try:
            detected, entries, skipped = _parse_model_list(
                _http_json(endpoint, timeout=timeout, api_key=api_key), endpoint
            )
        except FetchError as exc:
            problems.append(str(exc))
            continue
        if entries:
            return kind or detected, entries, skipped
        problems.append(
            f"{endpoint} lists {len(skipped)} models but none states a context window "
            f"(looked for {', '.join(_CONTEXT_FIELDS)})"
        )
    if kind is None and not path:  # a bare server URL: maybe Ollama
        try:
            entries, skipped = _fetch_ollama(url.rstrip("/"), timeout=timeout, api_key=api_key)
        except FetchError as exc:
            problems.append(f"not Ollama either: {exc}")
        else:
            if entries:
                return "ollama", entries, skipped
            problems.append("not Ollama either: no model states a context length")
    raise FetchError("; ".join(problems))
