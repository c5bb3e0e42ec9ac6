"""The cells of the speed benchmark, one per table row: this project (:mod:`benchmarks._ours`)
and the frameworks' built-ins (:mod:`benchmarks._builtins`) on one input.
"""

from __future__ import annotations

from benchmarks._builtins import llamaindex_buffer, raw_tiktoken, trim_messages_cell
from benchmarks._harness import Cell
from benchmarks._ours import langchain_history, llamaindex_memory, migrate_cold

__all__ = ["CELLS"]

ALL = ("cold", "warm", "append", "refit")

CELLS: tuple[Cell, ...] = (
    Cell(
        "lc-auto",
        "LangChain FittedChatMessageHistory.messages",
        "auto",
        ALL,
        True,
        langchain_history("auto"),
    ),
    Cell(
        "lc-trim",
        "LangChain FittedChatMessageHistory.messages",
        "trim",
        ALL,
        True,
        langchain_history("trim"),
    ),
    Cell(
        "li-auto",
        "LlamaIndex SessionMigratorMemory.get",
        "auto",
        ALL,
        True,
        llamaindex_memory("auto"),
    ),
    Cell(
        "li-trim",
        "LlamaIndex SessionMigratorMemory.get",
        "trim",
        ALL,
        True,
        llamaindex_memory("trim"),
    ),
    Cell("migrate-auto", "migrate()", "auto", ("cold",), True, migrate_cold("auto")),
    Cell("migrate-trim", "migrate()", "trim", ("cold",), True, migrate_cold("trim")),
    Cell(
        "li-buffer",
        "LlamaIndex ChatMemoryBuffer.get",
        "built-in",
        ("cold",),
        False,
        llamaindex_buffer(summary=False),
    ),
    Cell(
        "li-summary",
        "LlamaIndex ChatSummaryMemoryBuffer(llm=None).get",
        "built-in",
        ("cold",),
        False,
        llamaindex_buffer(summary=True),
    ),
    Cell(
        "lc-trim-tiktoken",
        "LangChain trim_messages(last), tiktoken counter",
        "built-in",
        ("cold",),
        False,
        trim_messages_cell("tiktoken"),
    ),
    Cell(
        "lc-trim-approx",
        "LangChain trim_messages(last), count_tokens_approximately",
        "built-in",
        ("cold",),
        False,
        trim_messages_cell("approx"),
    ),
    Cell(
        "raw",
        "lower bound: one tiktoken pass over every text",
        "-",
        ("cold",),
        False,
        raw_tiktoken,
    ),
)
