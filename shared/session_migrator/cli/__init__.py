"""The ``session-migrator`` command line. See ``session-migrator --help``."""

from session_migrator.cli._app import main

__all__ = ["main"]
