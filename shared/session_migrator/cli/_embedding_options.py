"""``--embeddings local``: hybrid recall with the local embedding model (all-MiniLM-L6-v2 run in
numpy, :func:`session_migrator.local_embeddings`), for the commands that fit a conversation
(``migrate``, ``import --model``, ``sessions show --strategy``) and for the MCP server (``mcp``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from session_migrator.recall._embeddings import Embeddings

__all__ = ["EMBEDDINGS", "add_embeddings_option", "embeddings_from_args"]

#: The choices of ``--embeddings``.
EMBEDDINGS = ("none", "local")


def add_embeddings_option(parser: argparse.ArgumentParser, *, what: str = "recall") -> None:
    """``--embeddings none|local`` on ``parser``; ``what`` says what it changes."""
    parser.add_argument(
        "--embeddings",
        choices=EMBEDDINGS,
        default="none",
        help=f"local: {what} also ranks the cut turns by their similarity to the question with "
        "all-MiniLM-L6-v2, run offline on this machine (needs the [local-embeddings] extra and "
        "the model's weights; see docs/embeddings.md); default: none, bm25 alone",
    )


def embeddings_from_args(args: argparse.Namespace) -> Embeddings | None:
    """The model ``--embeddings`` names (``None`` for none); a missing extra raises
    :class:`~session_migrator.MissingDependencyError`, which names the install commands."""
    if getattr(args, "embeddings", "none") != "local":
        return None
    from session_migrator.recall._local import local_embeddings

    return local_embeddings()
