"""The window a serving runtime really serves, asked of the server when the class does not say.

A local or self-hosted model's window lives in the runtime, not in its name: Ollama's
``num_ctx`` (a Modelfile's, ``OLLAMA_CONTEXT_LENGTH``, or the server's default), vLLM's and
SGLang's ``--max-model-len``, llama.cpp's (and llamafile's) ``--ctx-size``, LM Studio's loaded
context length. :func:`served_window` asks the server once per process (short timeout, cached
per runtime, base URL and model) and says where the answer came from:

- ``ollama``: ``/api/ps`` (the ``context_length`` of the loaded model), then ``/api/show``
  (``num_ctx`` in its ``parameters``); with neither, the server's default (4,096 tokens in
  current releases) capped by the model's trained length (``model_info`` ``*.context_length``);
- ``openai`` (an OpenAI-compatible server at a ``base_url``): ``/v1/models`` ``max_model_len``
  (vLLM, SGLang), llama.cpp's ``/props`` ``n_ctx`` (llamafile is llama.cpp's server), LM
  Studio's ``/api/v0/models/<id>`` ``loaded_context_length``, TGI's ``/info``
  ``max_total_tokens``.

:func:`runtime_window` turns that (or what the class says, which wins) into a
:class:`~session_migrator.ModelWindow` through the lookup, keeping the table's tokenizer and
output facts for a name it knows. :func:`note_prompt_read` catches a runtime that cut the prompt
silently (a reply's ``prompt_eval_count`` below what was sent): it warns once and
:func:`narrowed` fits to what was read from the next request on. No server is asked on a
request's path more than once: the answer is cached when a model's window is first resolved.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import urllib.error
import urllib.request
import warnings
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from session_migrator.models._windows import ModelWindow

__all__ = [
    "OLLAMA_DEFAULT_CONTEXT",
    "ServedWindow",
    "clear_served_cache",
    "is_hosted_openai",
    "narrowed",
    "note_prompt_read",
    "ollama_host",
    "runtime_window",
    "served_window",
]

#: Ollama's window when neither the request, the Modelfile nor the server sets one
#: (``OLLAMA_CONTEXT_LENGTH``'s default in current releases; 2,048 before 0.6).
OLLAMA_DEFAULT_CONTEXT = 4096
#: How long one question to a server may take, in seconds.
PROBE_TIMEOUT = 2.0


@dataclass(frozen=True, slots=True)
class ServedWindow:
    """A window a server reported: ``tokens`` and where they were read (``source``, e.g.
    ``"ollama:/api/show"``, ``"vllm:/v1/models"``)."""

    tokens: int
    source: str


_lock = threading.Lock()
_cache: dict[tuple[str, str, str], ServedWindow | None] = {}


def clear_served_cache() -> None:
    """Forget every server's answer (the next :func:`served_window` asks again) and every
    window narrowed by a silent cut (:func:`note_prompt_read`)."""
    with _lock:
        _cache.clear()
        _read.clear()


def is_hosted_openai(base_url: str | None) -> bool:
    """Whether ``base_url`` is OpenAI's own API (or unset): no server to ask, the table rules."""
    if not base_url:
        return True
    host = urlsplit(base_url).hostname or ""
    return host == "api.openai.com" or host.endswith(".openai.azure.com")


def ollama_host() -> str:
    """Where an Ollama client with no ``base_url`` goes: ``OLLAMA_HOST``, else localhost."""
    host = os.environ.get("OLLAMA_HOST", "").strip() or "127.0.0.1:11434"
    return host if "://" in host else f"http://{host}"


def _positive(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value > 0:
        return value
    if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
        return int(value)
    return None


def _ask(url: str, timeout: float, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return json.loads(reply.read().decode() or "null")
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _root(base_url: str) -> str:
    """``base_url`` without a trailing ``/v1`` (and ``/``): where a server's own routes live."""
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path[:-3] if parts.path.endswith("/v1") else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path.rstrip("/"), "", ""))


def _bare(name: str) -> str:
    return name if ":" in name else f"{name}:latest"


def _ollama(root: str, model: str, timeout: float) -> ServedWindow | None:
    ps = _ask(f"{root}/api/ps", timeout)
    for entry in (ps or {}).get("models") or [] if isinstance(ps, dict) else []:
        if isinstance(entry, dict) and _bare(str(entry.get("name") or entry.get("model"))) == _bare(
            model
        ):
            found = _positive(entry.get("context_length"))
            if found:
                return ServedWindow(found, "ollama:/api/ps")
    show = _ask(f"{root}/api/show", timeout, {"model": model})
    if not isinstance(show, dict):
        return None
    for line in str(show.get("parameters") or "").splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "num_ctx" and _positive(value.strip()):
            return ServedWindow(int(value.strip()), "ollama:/api/show")
    info = show.get("model_info")
    info = info if isinstance(info, dict) else {}
    trained = next(
        (_positive(v) for k, v in info.items() if k.endswith(".context_length") and _positive(v)),
        None,
    )
    window = min(OLLAMA_DEFAULT_CONTEXT, trained or OLLAMA_DEFAULT_CONTEXT)
    return ServedWindow(window, "ollama:/api/show+default")


def _openai_compatible(base_url: str, model: str, timeout: float) -> ServedWindow | None:
    root = _root(base_url)
    listing = _ask(f"{root}/v1/models", timeout)
    entries = listing.get("data") if isinstance(listing, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            found = _positive(entry.get("max_model_len"))
            if found:
                owner = str(entry.get("owned_by") or "openai-compatible")
                return ServedWindow(found, f"{owner}:/v1/models")
    props = _ask(f"{root}/props", timeout)
    if isinstance(props, dict):
        settings = props.get("default_generation_settings")
        found = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
        found = found or _positive(props.get("n_ctx"))
        if found:
            return ServedWindow(found, "llama.cpp:/props")
    studio = _ask(f"{root}/api/v0/models/{model}", timeout)
    if isinstance(studio, dict):
        found = _positive(studio.get("loaded_context_length")) or _positive(
            studio.get("max_context_length")
        )
        if found:
            return ServedWindow(found, "lmstudio:/api/v0/models")
    info = _ask(f"{root}/info", timeout)
    if isinstance(info, dict) and _positive(info.get("max_total_tokens")):
        return ServedWindow(int(info["max_total_tokens"]), "tgi:/info")
    return None


def served_window(
    runtime: str, base_url: str, model: str, *, timeout: float = PROBE_TIMEOUT
) -> ServedWindow | None:
    """The window the server at ``base_url`` serves ``model`` with, ``None`` when it does not
    say (or does not answer within ``timeout`` seconds). ``runtime`` is ``"ollama"`` or
    ``"openai"`` (any OpenAI-compatible server). Asked once per process for each
    (runtime, base URL, model); the answer, or its absence, is cached.
    """
    if runtime not in ("ollama", "openai"):
        raise ValueError(f"runtime must be 'ollama' or 'openai', not {runtime!r}")
    key = (runtime, base_url.rstrip("/"), model)
    with _lock:
        if key in _cache:
            return _cache[key]
    if runtime == "ollama":
        found = _ollama(_root(base_url), model, timeout)
    else:
        found = _openai_compatible(base_url, model, timeout)
    with _lock:
        _cache[key] = found
    return found


def runtime_window(
    name: str,
    *,
    runtime: str,
    base_url: str | None,
    context_window: int | None = None,
    said_by: str = "",
    timeout: float = PROBE_TIMEOUT,
) -> ModelWindow | None:
    """The window ``name`` is served with: ``context_window`` when the provider class says it
    (``ChatOllama(num_ctx=...)``; ``source="class:<said_by>"``), else the server's answer
    (:func:`served_window`; ``source`` names the route read, e.g. ``"ollama:/api/show"``), merged
    with the table's facts of the name (tokenizer, output cap). ``None`` when neither says: the
    caller goes on to the table. An ``openai`` runtime at OpenAI's own API is never asked.

    >>> runtime_window("llama3.1:8b", runtime="ollama", base_url=None, context_window=8192,
    ...                said_by="ChatOllama.num_ctx").source
    'class:ChatOllama.num_ctx'
    """
    from session_migrator.models._lookup import lookup_model

    if context_window is not None:
        tokens, source = context_window, f"class:{said_by or runtime}"
    else:
        if runtime == "openai" and is_hosted_openai(base_url):
            return None
        url = base_url or (ollama_host() if runtime == "ollama" else "")
        found = served_window(runtime, url, name, timeout=timeout) if url else None
        if found is None:
            return None
        tokens, source = found.tokens, found.source
    return lookup_model(
        name, context_window=tokens, max_input_tokens=tokens, framework=source, provider=runtime
    ).with_changes(name=name)


# -- what a runtime was seen to read ----------------------------------------------------------

#: A reply that says the runtime read less than this share of the prompt tokens counted as sent
#: is a silent cut (Ollama's ``prompt_eval_count``; the share leaves room for a count that is an
#: estimate above the runtime's own tokenizer).
CUT_SHARE = 0.75
_read: dict[str, int] = {}


def note_prompt_read(window: ModelWindow, sent: int, read: int | None) -> ModelWindow | None:
    """Record a reply's count of the prompt tokens the runtime read (``read``) against the
    ``sent`` tokens fitted to ``window``. When the runtime read clearly fewer, it cut the prompt
    silently: warn once (a :class:`RuntimeWarning` and a log record naming the window now used)
    and return the narrowed window, which :func:`narrowed` applies from then on. ``None`` when
    nothing was cut."""
    if read is None or read <= 0 or read >= sent * CUT_SHARE:
        return None
    with _lock:
        known = _read.get(window.name)
        if known is not None and known <= read:
            return None
        _read[window.name] = read
    found = narrowed(window)
    message = (
        f"the runtime serving {window.name!r} read {read:,} of the {sent:,} prompt tokens sent "
        f"(fitted to {window.max_input_tokens:,}, {window.source}): it cut the prompt silently. "
        f"Fitting to {found.max_input_tokens:,} tokens from now on; set the window the runtime "
        "serves (ChatOllama(num_ctx=...), OLLAMA_CONTEXT_LENGTH) to keep more."
    )
    warnings.warn(message, RuntimeWarning, stacklevel=3)
    logging.getLogger("session_migrator").warning(message)
    return found


def narrowed(window: ModelWindow) -> ModelWindow:
    """``window`` capped at what its runtime was seen to read (:func:`note_prompt_read`)."""
    with _lock:
        read = _read.get(window.name)
    if read is None or read >= window.max_input_tokens:
        return window
    return window.with_changes(
        context_window=min(window.context_window, read),
        max_input_tokens=read,
        source=f"{window.source}+read:{read}",
    )
