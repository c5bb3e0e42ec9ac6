"""Per-model correction factors for estimated token counts, persisted under the data home.

An estimating counter counts ``o200k tokens x family multiplier``; the factor kept here for a
model multiplies that multiplier (see :func:`session_migrator.counting._tokens.counter_for`). It
starts
at 1.0 and moves only when the user feeds it facts:

- :func:`calibrate` folds in observed usage (a response's real ``input_tokens`` against what this
  library estimated for the request), moving halfway toward the observed ratio each time;
- ``recalibrate_from_exact`` (in ``_tokens``, the counting layer above this one) measures the
  ratio from an exact counter over sample messages and sets it through :func:`set_factor`.

This module sits below the counters and the lookup: it imports only the configuration and the
bundled table. Factors stay within [0.5, 2.0] and are stored per model under its bundled row's
name (:func:`session_migrator.models._table.bundled_name`: every alias of a model shares one
factor) in ``data_home()/calibration.json``::

    {"version": 1, "models": {"claude-opus-4-7": {"factor": 1.1, "observations": 3,
                                                  "method": "usage", "updated": "..."}}}

The file is read lazily on first use and again only when its path (``SESSION_MIGRATOR_HOME``)
or modification time changes, so another process's calibration is picked up. Writes are atomic
(temporary file and rename). A corrupt or unreadable file counts as empty (logged once); a write
that fails keeps the factor in memory and logs, it never raises.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import tempfile
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from session_migrator._config import data_home
from session_migrator.models._table import bundled_name

__all__ = [
    "CALIBRATION_FILE",
    "calibrate",
    "calibration_factor",
    "calibration_path",
    "reset_calibration",
    "set_factor",
]

#: File name of the persisted factors, under :func:`session_migrator._config.data_home`.
CALIBRATION_FILE = "calibration.json"
_ALPHA = 0.5
_MIN_FACTOR = 0.5
_MAX_FACTOR = 2.0
_VERSION = 1

_log = logging.getLogger("session_migrator.calibration")
_lock = threading.RLock()


class _State:
    """The factors loaded from one file, and the file's identity when read."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.stamp: tuple[int, int, int] | None = None
        self.models: dict[str, dict[str, Any]] = {}


_state = _State()
_warned_paths: set[str] = set()


def calibration_path() -> Path:
    """Where factors are persisted: ``data_home() / "calibration.json"``."""
    return data_home() / CALIBRATION_FILE


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _read(path: Path) -> dict[str, dict[str, Any]]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        if str(path) not in _warned_paths:
            _warned_paths.add(str(path))
            _log.warning("ignoring unreadable calibration file %s: %s", path, exc)
        return {}
    models = raw.get("models") if isinstance(raw, dict) else None
    if not isinstance(models, dict):
        return {}
    out: dict[str, dict[str, Any]] = {}
    for name, entry in models.items():
        if not isinstance(entry, dict):
            continue
        factor = entry.get("factor")
        if isinstance(factor, bool) or not isinstance(factor, int | float):
            continue
        if _MIN_FACTOR <= factor <= _MAX_FACTOR:
            out[str(name)] = dict(entry)
    return out


def _current() -> _State:
    """The state for the current data home, re-read when the file changed (caller holds lock)."""
    path = calibration_path()
    stamp = _stamp(path)
    if path != _state.path or stamp != _state.stamp:
        _state.models = _read(path) if stamp is not None else {}
        _state.path = path
        _state.stamp = stamp
    return _state


def _write(state: _State) -> None:
    """Persist ``state`` atomically (caller holds lock); failures are logged, never raised."""
    assert state.path is not None
    path = state.path
    payload = {"version": _VERSION, "models": dict(sorted(state.models.items()))}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".calibration-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(payload, fh, indent=2, sort_keys=True)
                fh.write("\n")
            Path(tmp).replace(path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        _log.warning("could not save calibration to %s (kept in memory): %s", path, exc)
        return
    state.stamp = _stamp(path)


def _set(model: str, factor: float, *, method: str, persist: bool) -> float:
    state = _current()
    old = state.models.get(model, {})
    observations = old.get("observations", 0)
    entry = {
        "factor": factor,
        "method": method,
        "observations": (observations if isinstance(observations, int) else 0) + 1,
        "updated": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    state.models[model] = entry
    if persist:
        _write(state)
    return factor


def _clamp(value: float) -> float:
    return round(min(_MAX_FACTOR, max(_MIN_FACTOR, value)), 4)


def calibration_factor(model: str) -> float:
    """The learned correction for ``model``'s estimates (1.0 until calibrated)."""
    with _lock:
        models = _current().models
        entry = models.get(model)
        if entry is None and models:
            entry = models.get(_model_key(model))  # (an alias of a calibrated model)
    if entry is None:
        return 1.0
    return float(entry["factor"])


@functools.lru_cache(maxsize=4096)
def _model_key(model: str) -> str:
    """The name a model's factor is kept under: its bundled row's name (else the name routed),
    so ``anthropic/claude-3-haiku`` and ``claude-3-haiku-20240307`` are one model."""
    return bundled_name(model)


def calibrate(model: str, *, estimated: int, observed: int, persist: bool = True) -> float:
    """Fold one observation of real input tokens into ``model``'s estimate correction.

    ``estimated`` is what this library counted for the request; ``observed`` what the provider
    reported (``usage.input_tokens``). The factor moves halfway toward ``observed/estimated``
    each time, within [0.5, 2.0]; exact counters ignore it. The new factor is saved (unless
    ``persist=False``) and returned. Non-positive inputs change nothing.
    """
    model = _model_key(model)
    if not (0 < estimated < math.inf and 0 < observed < math.inf):  # (NaN compares false)
        return calibration_factor(model)
    with _lock:
        old = calibration_factor(model)
        ratio = observed / estimated * old
        new = _clamp(old + (ratio - old) * _ALPHA)
        return _set(model, new, method="usage", persist=persist)


def reset_calibration(model: str | None = None) -> None:
    """Forget calibration for ``model`` (or for all models), on disk too."""
    if model is not None:
        model = _model_key(model)
    with _lock:
        state = _current()
        if model is None:
            if not state.models and state.stamp is None:
                return
            state.models.clear()
        elif state.models.pop(model, None) is None:
            return
        _write(state)


def set_factor(model: str, ratio: float, *, method: str, persist: bool = True) -> float:
    """Replace ``model``'s factor by ``ratio`` (clamped to [0.5, 2.0]); returns the new factor."""
    with _lock:
        return _set(_model_key(model), _clamp(ratio), method=method, persist=persist)
