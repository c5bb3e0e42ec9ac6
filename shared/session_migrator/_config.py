"""Configuration resolves here, in one place: argument, then environment variable, then default.

Library code reads the environment and never writes it.

- ``SESSION_MIGRATOR_HOME``: the folder for the default store, caches and calibration
  (default: the platform's user data directory, e.g. ``~/.local/share/session-migrator``);
- ``SESSION_MIGRATOR_STORE``: the default store URL (default: ``sqlite:///$HOME/sessions.db``);
- ``SESSION_MIGRATOR_MODELS``: a JSON or TOML file of model window overrides.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

__all__ = ["data_home", "default_store_url", "models_override_file"]

HOME_ENV = "SESSION_MIGRATOR_HOME"
STORE_ENV = "SESSION_MIGRATOR_STORE"
MODELS_ENV = "SESSION_MIGRATOR_MODELS"


def data_home(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The folder for the default store and caches (not created here)."""
    if explicit is not None:
        return Path(explicit)
    value = os.environ.get(HOME_ENV)
    if value:
        return Path(value)
    return _platform_data_dir()


@functools.cache
def _platform_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("session-migrator", appauthor=False))


def default_store_url(explicit: str | None = None) -> str:
    """The store URL to use when none is given."""
    if explicit:
        return explicit
    value = os.environ.get(STORE_ENV)
    if value:
        return value
    return f"sqlite:///{data_home() / 'sessions.db'}"


def models_override_file(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The user's model override file, if one is configured."""
    if explicit is not None:
        return Path(explicit)
    value = os.environ.get(MODELS_ENV)
    return Path(value) if value else None
