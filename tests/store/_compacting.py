"""A fitter process for the cross-process compaction test (run as a script, not collected).

    python _compacting.py URL SESSION_ID CALLS_FILE

Opens a :class:`SessionFitter` with a compactor on the session (already past the budget),
reads it, prints ``ready``, waits for a line on stdin, then fits once (which hands the cut
part to the compactor), waits for the compactor, and prints one JSON line: the fitter's
``compaction`` and the compactor's ``status()``. The summarizer sleeps a second and appends a
line (its process id) to CALLS_FILE at each call.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence

from session_migrator import Compactor, Message, ModelWindow, SessionFitter, TokenCounter

WINDOW = ModelWindow("small", "example", 2_000, 2_000, 0, "o200k_base", "explicit")


class SlowCounted:
    name = "slow-counted"

    def __init__(self, calls_file: str) -> None:
        self.calls_file = calls_file

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        counter: TokenCounter,
        previous: str | None = None,
    ) -> str:
        with open(self.calls_file, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(1.0)
        return f"The user asked when {len(messages)} orders ship."


def main(argv: list[str]) -> int:
    url, session_id, calls_file = argv
    compactor = Compactor(workers=1, timeout=10)
    fitter = SessionFitter(
        session_id,
        store=url,
        strategy="summarize",
        summarizer=SlowCounted(calls_file),
        reserve_output=0,
        compactor=compactor,
    )
    fitter.refresh()
    print("ready", flush=True)
    sys.stdin.readline()
    fitter.fit(WINDOW)
    done = compactor.wait(10)
    print(json.dumps({"done": done, **fitter.compaction, **compactor.status()}), flush=True)
    compactor.close()
    fitter.store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
