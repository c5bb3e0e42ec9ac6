"""``models``, ``window`` and ``count`` commands (filled in by the model-window work)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    del sub


def _unused(args: argparse.Namespace) -> int:
    return 0
