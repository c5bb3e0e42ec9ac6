"""A writer process for the reliability tests (run as a script, not collected by pytest).

    python _writer.py URL SESSION_ID NAME COUNT [BATCH]

Opens the store, prints ``ready``, waits for a line on stdin, then appends COUNT messages with
ids ``NAME-00000``, ``NAME-00001``, ... in calls of BATCH messages (default 1), printing each
call's last id once ``append`` has returned. Exits 0 when all went well; any error goes to
stderr with exit code 1.
"""

from __future__ import annotations

import sys

from session_migrator import Message
from session_migrator.store import open_store


def main(argv: list[str]) -> int:
    url, session_id, name, count = argv[0], argv[1], argv[2], int(argv[3])
    batch = int(argv[4]) if len(argv) > 4 else 1
    store = open_store(url)
    print("ready", flush=True)
    sys.stdin.readline()
    for start in range(0, count, batch):
        messages = [
            Message("user", f"{name} says {i}", id=f"{name}-{i:05d}")
            for i in range(start, min(start + batch, count))
        ]
        store.append(session_id, messages)
        print(messages[-1].id, flush=True)
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
