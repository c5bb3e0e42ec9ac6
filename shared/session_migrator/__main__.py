"""``python -m session_migrator`` runs the CLI."""

from session_migrator.cli import main

raise SystemExit(main())
