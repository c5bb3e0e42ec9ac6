"""Live model facts cached on disk (placeholder until the live-refresh work lands)."""

from __future__ import annotations

from session_migrator._windows import ModelWindow


def lookup_cached(name: str) -> ModelWindow | None:
    """The cached live facts for a normalised model name, or ``None``."""
    del name
    return None
