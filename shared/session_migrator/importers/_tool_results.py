"""What a tool's result holds besides its text, kept on import: Claude Code's structured
``toolUseResult`` (:func:`claude_tool_result`) and the results of the API's server tools (web
search, :func:`server_tool_result`); Codex's tool outputs (:func:`codex_output`) and its web
searches (:func:`web_search_text`). The text is what a model is sent; the rest is kept in the
result's ``extra["source_result"]``. Used by :mod:`._claude_code` and :mod:`._codex`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from session_migrator.importers._common import result_text

__all__ = ["claude_tool_result", "codex_output", "server_tool_result", "web_search_text"]


#: Keys of a ``toolUseResult`` left out of what is kept: the whole file before an edit
#: (``originalFile``), which can be large and is in the project's history.
_BULKY_RESULT_KEYS = ("originalFile",)


def claude_tool_result(value: Any) -> dict[str, Any] | None:
    """Claude Code's structured result of a tool (``toolUseResult``: ``stdout``, ``stderr``,
    ``interrupted`` of a ``Bash`` call; ``filePath`` and ``structuredPatch`` of an edit; the
    ``file`` a ``Read`` read; ...) as kept beside the result's text: without the file's whole
    text where the text or the call already holds it (a read file's ``content``, a written
    file's ``content``, an image's ``base64``, the file before an edit)."""
    if not isinstance(value, Mapping) or not value:
        return None
    out = {k: v for k, v in value.items() if k not in _BULKY_RESULT_KEYS}
    file = out.get("file")
    if isinstance(file, Mapping) and ("content" in file or "base64" in file):
        out["file"] = {k: v for k, v in file.items() if k not in ("content", "base64")}
    if out.get("type") in ("create", "update") and isinstance(out.get("content"), str):
        del out["content"]
    return out


def server_tool_result(block: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A server tool's result block as text and the data kept beside it: a web search's
    results as lines of title and address (their encrypted page content, for the source model
    only, left out), an error as ``[tool error] ...``."""
    btype = str(block.get("type"))
    content = block.get("content")
    if isinstance(content, list):
        found = [
            {k: r[k] for k in ("title", "url", "page_age") if isinstance(r.get(k), str)}
            for r in content
            if isinstance(r, Mapping)
        ]
        lines = [
            f"- {r.get('title') or r.get('url', '')}: {r.get('url', '')}"
            + (f" ({r['page_age']})" if r.get("page_age") else "")
            for r in found
        ]
        text = "Web search results:\n" + "\n".join(lines) if lines else "No results."
        return text, {"type": btype, "results": found}
    if isinstance(content, Mapping):
        kept = _without_encrypted(content)
        if str(content.get("type", "")).endswith("_error"):
            return f"[tool error] {content.get('error_code', 'error')}", {"type": btype, **kept}
        return result_text(kept), {"type": btype, **kept}
    return result_text(content), {"type": btype}


def _without_encrypted(value: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: _without_encrypted(v) if isinstance(v, Mapping) else v
        for k, v in value.items()
        if not k.startswith("encrypted")
    }


def codex_output(output: Any) -> tuple[str, dict[str, Any] | None]:
    """A Codex tool output as text, and what it holds besides (``None`` when nothing): a plain
    string; the ``content`` of an output object (its other keys, such as ``success``, kept
    apart); the JSON the shell tools of earlier releases return
    (``{"output": ..., "metadata": {"exit_code", "duration_seconds"}}``) as its output after its
    exit code, the metadata kept apart."""
    if isinstance(output, Mapping) and isinstance(output.get("content"), str):
        rest = {k: v for k, v in output.items() if k != "content"}
        return cast(str, output["content"]), rest or None
    if isinstance(output, str) and output.startswith("{") and '"output"' in output:
        try:
            parsed = json.loads(output)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("output"), str):
            rest = {k: v for k, v in parsed.items() if k != "output"}
            meta = rest.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, Mapping) else None
            text = parsed["output"]
            if isinstance(code, int) and not isinstance(code, bool):
                text = f"Exit code: {code}\nOutput:\n{text}"
            return text, rest or None
    return result_text(output), None


def web_search_text(action: Mapping[str, Any], status: str) -> str:
    """What a web search did, in words (its results are not in the file)."""
    kind = action.get("type")
    queries = action.get("queries")
    query = action.get("query") or (
        "; ".join(q for q in queries if isinstance(q, str)) if isinstance(queries, list) else None
    )
    if kind == "open_page" and action.get("url"):
        did = f"opened {action['url']}"
    elif kind == "find_in_page" and action.get("url"):
        did = f"searched {action['url']} for {action.get('pattern')!r}"
    elif query:
        did = f"searched the web for {query!r}"
    else:
        did = "searched the web"
    return f"[web search {status}: {did}; the session file does not keep what it found]"
