"""Write the bundled demo conversation: a long coding-agent session, deterministic.

    python scripts/make_demo_conversation.py  # writes shared/session_migrator/_data/demo_conversation.json

The conversation follows one engineer (Priya Raman) and an agent over a working day on the
"ledgerd" billing service: a MySQL -> PostgreSQL migration, a flaky CI job, an invoice bug
reported by a customer, a performance regression, and a release plan. Facts stated early
(names, ports, ticket and invoice numbers, decisions, preferences) are asked for at the end, so
a migration that loses them is visible. Large tool outputs (logs, files, query plans) make it long.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "shared" / "session_migrator" / "_data"
OUT_FILE = OUT / "demo_conversation.json"

SYSTEM = (
    "You are Forge, a senior software engineering agent working in the ledgerd repository "
    "(a Python billing service). You can read files, run commands and tests, and query the "
    "staging database through tools. Be precise, cite file paths, and keep the user's stated "
    "preferences and decisions in mind for the whole session."
)


class Builder:
    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
        self.calls = 0

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def assistant(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def tool(self, name: str, args: dict[str, Any], output: str, note: str = "") -> None:
        self.calls += 1
        call_id = f"call_{self.calls:03d}"
        self.messages.append(
            {
                "role": "assistant",
                "content": note or None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})

    # -- synthetic but realistic tool outputs ----------------------------------------------

    def log(self, service: str, lines: int, needle: str | None = None) -> str:
        levels = ["INFO"] * 8 + ["DEBUG"] * 4 + ["WARN", "ERROR"]
        events = [
            "request completed path=/v2/invoices status=200 duration_ms={ms}",
            "db pool checkout wait_ms={ms} pool=primary size=20 in_use={n}",
            "cache miss key=customer:{n}:plan ttl=300",
            "published event=invoice.finalized invoice_id=INV-{n} amount_cents={amt}",
            "retrying job=sync_tax_rates attempt={a} backoff_s={a}",
            "slow query duration_ms={ms} statement=SELECT ... FROM line_items WHERE invoice_id = $1",
            "webhook delivered endpoint=https://hooks.example.test/{n} status=204",
        ]
        out = []
        for i in range(lines):
            ts = f"2026-11-30T{8 + i // 600:02d}:{(i // 10) % 60:02d}:{i % 60:02d}.{i * 37 % 1000:03d}Z"
            level = self.rng.choice(levels)
            text = self.rng.choice(events).format(
                ms=self.rng.randint(2, 2400),
                n=self.rng.randint(1000, 99999),
                amt=self.rng.randint(100, 900000),
                a=self.rng.randint(1, 5),
            )
            out.append(f"{ts} {level:5} {service} {text}")
            if needle and i == lines * 2 // 3:
                out.append(f"{ts} ERROR {service} {needle}")
        return "\n".join(out)

    def code(self, module: str, functions: int) -> str:
        parts = [f'"""{module}: part of ledgerd."""', "", "from __future__ import annotations", ""]
        for i in range(functions):
            name = self.rng.choice(["compute", "apply", "load", "render", "validate", "sync"])
            noun = self.rng.choice(["discount", "tax", "line_items", "invoice", "credit", "plan"])
            parts.append(
                f"def {name}_{noun}_{i}(invoice: Invoice, *, currency: str = 'EUR') -> Money:"
            )
            parts.append(f'    """{name.title()} the {noun.replace("_", " ")} of an invoice."""')
            parts.append("    total = Money(0, currency)")
            parts.append(
                f"    for item in invoice.{noun if noun == 'line_items' else 'line_items'}:"
            )
            parts.append(
                f"        total += item.amount * Decimal('{self.rng.randint(1, 99)}.{self.rng.randint(0, 99):02d}') / 100"
            )
            parts.append("    return total.quantize(CENTS, rounding=ROUND_HALF_EVEN)")
            parts.append("")
        return "\n".join(parts)

    def test_run(self, passed: int, failed: list[str]) -> str:
        lines = [
            "============================= test session starts =============================",
            "platform linux -- Python 3.11.7, pytest-8.3.2",
            f"collected {passed + len(failed)} items",
            "",
        ]
        for i in range(passed // 20):
            lines.append(
                f"tests/test_{self.rng.choice(['billing', 'tax', 'api', 'models', 'sync'])}_{i}.py "
                + "." * 20
                + f" [{min(99, i * 3)}%]"
            )
        for name in failed:
            lines += ["", f"___________________________ {name} ___________________________", ""]
            lines += [
                f"    def {name.split('::')[-1]}():",
                "        invoice = make_invoice(lines=3, discount=Decimal('0.15'))",
                ">       assert invoice.total == Money('84.15', 'EUR')",
                "E       AssertionError: assert Money('84.14', 'EUR') == Money('84.15', 'EUR')",
                "",
            ]
        lines.append(
            f"=========== {len(failed)} failed, {passed} passed in {self.rng.randint(30, 90)}.{self.rng.randint(10, 99)}s ==========="
        )
        return "\n".join(lines)

    def plan_output(self, rows: int) -> str:
        lines = ["QUERY PLAN", "-" * 60]
        for i in range(rows):
            lines.append(
                f"  ->  Index Scan using line_items_invoice_id_idx on line_items li_{i}  (cost=0.43..{self.rng.randint(8, 900)}.12 rows={self.rng.randint(1, 80)} width=64) (actual time=0.0{self.rng.randint(10, 99)}..{self.rng.randint(1, 40)}.{self.rng.randint(100, 999)} rows={self.rng.randint(1, 80)} loops=1)"
            )
            lines.append(
                f"        Index Cond: (invoice_id = inv.id)  Buffers: shared hit={self.rng.randint(3, 300)} read={self.rng.randint(0, 40)}"
            )
        lines.append(f"Planning Time: 0.{self.rng.randint(100, 999)} ms")
        lines.append(
            f"Execution Time: {self.rng.randint(300, 2900)}.{self.rng.randint(100, 999)} ms"
        )
        return "\n".join(lines)


def build() -> list[dict[str, Any]]:
    b = Builder()
    # -- 1. kickoff: facts that matter later -----------------------------------------------
    b.user(
        "Morning! I'm Priya Raman, tech lead for ledgerd. Today we move the billing database from "
        "MySQL 5.7 to PostgreSQL 16. Staging Postgres is at pg-staging.internal port 6432 (through "
        "PgBouncer), database ledger_stage. Our deadline is Friday 4 December, 17:00 CET. I prefer "
        "small reviewable commits and I never want raw SQL in the service layer: everything goes "
        "through the repository classes in ledgerd/repos/."
    )
    b.assistant(
        "Noted, Priya. Plan for today: (1) inventory the MySQL-specific SQL, (2) port the schema "
        "with Alembic, (3) switch the repositories, (4) run the full test suite against staging "
        "Postgres on port 6432, (5) prepare the cut-over. I'll keep commits small and keep SQL "
        "inside ledgerd/repos/. Deadline: Friday 4 December, 17:00 CET."
    )
    b.tool(
        "grep",
        {"pattern": "ON DUPLICATE KEY|IFNULL|GROUP_CONCAT|`", "path": "ledgerd/"},
        "\n".join(
            f"ledgerd/repos/{f}.py:{b.rng.randint(10, 400)}: {s}"
            for f, s in [
                ("invoices", "INSERT ... ON DUPLICATE KEY UPDATE status = VALUES(status)"),
                ("customers", "SELECT IFNULL(vat_id, '') FROM customers"),
                ("reports", "GROUP_CONCAT(li.sku SEPARATOR ',')"),
                ("line_items", "SELECT `order`, `desc` FROM line_items"),
                (
                    "credits",
                    "INSERT ... ON DUPLICATE KEY UPDATE balance = balance + VALUES(balance)",
                ),
            ]
            * 6
        ),
        "Searching for MySQL-only constructs.",
    )
    b.assistant(
        "Found 30 MySQL-specific spots in 5 repository modules: ON DUPLICATE KEY UPDATE in "
        "invoices.py and credits.py (-> INSERT ... ON CONFLICT), IFNULL in customers.py (-> "
        "COALESCE), GROUP_CONCAT in reports.py (-> string_agg), and backtick-quoted reserved words "
        "`order` and `desc` in line_items.py (-> rename columns to position and description)."
    )
    b.user(
        "Good. Decision: we rename the columns to position and description rather than quoting them. "
        "Ticket for the whole migration is LEDG-2417. Please read the schema file first."
    )
    b.tool(
        "read_file",
        {"path": "migrations/schema_mysql.sql"},
        "\n".join(
            f"CREATE TABLE t_{i} (\n  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,\n  invoice_id BIGINT UNSIGNED NOT NULL,\n  amount_cents INT NOT NULL,\n  currency CHAR(3) NOT NULL DEFAULT 'EUR',\n  created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,\n  PRIMARY KEY (id),\n  KEY idx_invoice (invoice_id)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;"
            for i in range(40)
        ),
    )
    b.assistant(
        "The schema has 40 InnoDB tables, all utf8mb4, BIGINT UNSIGNED keys with AUTO_INCREMENT, "
        "DATETIME timestamps. In Postgres: BIGINT GENERATED ALWAYS AS IDENTITY, timestamptz, "
        "and CHECK (amount_cents >= 0) where UNSIGNED mattered."
    )

    # -- 2. schema port, several rounds -------------------------------------------------------
    for i in range(12):
        table = [
            "invoices",
            "line_items",
            "customers",
            "credits",
            "payments",
            "refunds",
            "plans",
            "subscriptions",
            "tax_rates",
            "webhooks",
            "audit_log",
            "exports",
        ][i]
        b.user(f"Next: port the {table} table. Keep the {table} repository API unchanged.")
        b.tool(
            "read_file",
            {"path": f"ledgerd/repos/{table}.py"},
            b.code(f"ledgerd.repos.{table}", 6 + i % 4),
        )
        b.tool(
            "write_file",
            {"path": f"migrations/versions/2417_{i:02d}_{table}.py"},
            f"wrote 1 file, {b.rng.randint(40, 160)} lines",
        )
        b.assistant(
            f"Ported {table}: identity key, timestamptz columns, CHECK constraints for amounts, and "
            f"the repository keeps its public methods. Alembic revision 2417_{i:02d}. "
            + (
                "Note: "
                + [
                    "credits uses INSERT ... ON CONFLICT (customer_id) DO UPDATE now.",
                    "tax_rates needs NUMERIC(7,4) to keep 4 decimals.",
                    "audit_log is append-only; I added a BRIN index on created_at.",
                ][i % 3]
                if i % 4 == 1
                else ""
            )
        )

    # -- 3. flaky CI ------------------------------------------------------------------------
    b.user(
        "CI job 'integration-pg' failed twice on main. Can you look? Build numbers 8812 and 8815."
    )
    b.tool(
        "ci_logs",
        {"job": "integration-pg", "build": 8812},
        b.log(
            "ci-runner",
            420,
            "psycopg.errors.SerializationFailure: could not serialize access due to concurrent update (test_credits_concurrent_topup)",
        ),
    )
    b.tool(
        "ci_logs",
        {"job": "integration-pg", "build": 8815},
        b.log(
            "ci-runner",
            380,
            "psycopg.errors.SerializationFailure: could not serialize access due to concurrent update (test_credits_concurrent_topup)",
        ),
    )
    b.assistant(
        "Both failures are the same: test_credits_concurrent_topup hits SerializationFailure under "
        "REPEATABLE READ. MySQL's default isolation hid it. Fix: retry the top-up transaction up to 3 "
        "times on SerializationFailure in CreditsRepo.top_up (inside ledgerd/repos/credits.py, so no SQL "
        "leaks into the service layer)."
    )
    b.user(
        "Do the retry, max 3 attempts with jittered backoff, and mark the test as a regression test."
    )
    b.tool("write_file", {"path": "ledgerd/repos/credits.py"}, "wrote 1 file, 214 lines")
    b.tool("run_tests", {"path": "tests/test_credits.py", "count": 50}, b.test_run(400, []))
    b.assistant(
        "50 repeated runs of tests/test_credits.py pass (400 tests each). The retry lives in "
        "CreditsRepo.top_up with 3 attempts and jittered backoff (50-200 ms)."
    )

    # -- 4. customer invoice bug ------------------------------------------------------------
    b.user(
        "Support escalated a customer issue: Northwind Traders (customer id 58213) says invoice "
        "INV-20931 is off by one cent: 84.14 EUR instead of 84.15 EUR. Their contact is "
        "Jonas Becker, jonas.becker@northwind.example. Please investigate."
    )
    b.tool(
        "query_db",
        {"sql_via_repo": "InvoicesRepo.get('INV-20931')"},
        json.dumps(
            {
                "invoice": "INV-20931",
                "customer_id": 58213,
                "lines": [{"sku": "LED-PRO-12", "qty": 3, "unit_cents": 3300, "discount": "0.15"}],
                "total_cents": 8414,
                "currency": "EUR",
            },
            indent=2,
        ),
    )
    b.tool(
        "read_file",
        {"path": "ledgerd/billing/discounts.py"},
        b.code("ledgerd.billing.discounts", 14),
    )
    b.tool(
        "run_tests",
        {"path": "tests/test_discounts.py"},
        b.test_run(120, ["tests/test_discounts.py::test_discount_rounding_half_even"]),
    )
    b.assistant(
        "Root cause: discounts are rounded per line with ROUND_HALF_EVEN before summing; 3 x 33.00 x "
        "0.85 = 84.15 exactly, but the per-unit rounding of 28.05 happens after a float conversion in "
        "apply_discount_3, giving 28.0466... -> 84.14. Fix: keep Decimal end to end and round once per "
        "invoice with ROUND_HALF_UP, which is what the contract with customers says."
    )
    b.user(
        "Agreed: round once per invoice, ROUND_HALF_UP. Also issue a 0.01 EUR credit note to "
        "Northwind and reply to Jonas. Credit note number should follow CN-2026-0457."
    )
    b.tool("write_file", {"path": "ledgerd/billing/discounts.py"}, "wrote 1 file, 188 lines")
    b.tool(
        "create_credit_note",
        {
            "customer_id": 58213,
            "amount_cents": 1,
            "number": "CN-2026-0458",
            "reason": "rounding correction INV-20931",
        },
        json.dumps({"ok": True, "credit_note": "CN-2026-0458", "amount": "0.01 EUR"}),
    )
    b.assistant(
        "Fixed the rounding (Decimal end to end, ROUND_HALF_UP once per invoice), created credit "
        "note CN-2026-0458 for 0.01 EUR to Northwind Traders (customer 58213), and drafted the "
        "reply to Jonas Becker at jonas.becker@northwind.example."
    )

    # -- 5. performance regression ----------------------------------------------------------
    for round_ in range(8):
        b.user(
            [
                "The /v2/invoices endpoint p95 went from 180 ms to 1.9 s on staging after the port. Why?",
                "Show me the query plan for the invoice listing.",
                "What about the N+1 on line items?",
                "Try the batched loader.",
                "Run the load test again, 200 rps for 5 minutes.",
                "Compare with MySQL numbers from last week.",
                "Is PgBouncer in transaction mode a problem for prepared statements?",
                "OK, summarize the performance work so far.",
            ][round_]
        )
        if round_ in (0, 2, 4):
            b.tool(
                "service_logs", {"service": "ledgerd-api", "minutes": 30}, b.log("ledgerd-api", 500)
            )
        if round_ in (1, 3, 5):
            b.tool(
                "explain_analyze", {"query": "InvoicesRepo.list_for_customer"}, b.plan_output(60)
            )
        b.assistant(
            [
                "The logs show slow queries on line_items by invoice_id: 60 queries per request (N+1).",
                "The plan is index scans, each cheap, but 60 loops per request add up to 1.7 s.",
                "Yes: InvoicesRepo.list_for_customer loads line items lazily per invoice.",
                "Batched loader in ledgerd/repos/line_items.py: one query with invoice_id = ANY($1).",
                "Load test at 200 rps for 5 minutes: p50 41 ms, p95 162 ms, p99 240 ms, 0 errors.",
                "Last week's MySQL p95 was 180 ms; we are now at 162 ms, about 10% better.",
                "Yes: PgBouncer in transaction mode breaks server-side prepared statements; set "
                "prepare_threshold=None in psycopg for the 6432 pool.",
                "Performance: N+1 fixed with a batched loader; p95 162 ms at 200 rps (MySQL: 180 ms); "
                "psycopg prepare_threshold=None because of PgBouncer transaction mode on port 6432.",
            ][round_]
        )

    # -- 6. many small follow-ups (chatty middle part) --------------------------------------
    topics = [
        ("Rename the Alembic branch label to ledg-2417?", "Done: branch label ledg-2417."),
        (
            "Do we need a backfill for tax_rates precision?",
            "Yes, 312 rows had 3 decimals; backfilled to 4.",
        ),
        (
            "Add a CHECK that currency is ISO 4217 uppercase.",
            "Added CHECK (currency ~ '^[A-Z]{3}$').",
        ),
        ("What's our Postgres work_mem on staging?", "work_mem is 16MB on staging."),
        (
            "Bump it to 32MB for the reporting role only.",
            "ALTER ROLE reporting SET work_mem = '32MB' applied.",
        ),
        (
            "Any remaining GROUP_CONCAT?",
            "None left; reports.py uses string_agg(sku, ',' ORDER BY sku).",
        ),
        (
            "Are webhooks idempotent after the port?",
            "Yes, webhooks use ON CONFLICT (event_id) DO NOTHING.",
        ),
        (
            "Check that exports still stream.",
            "Exports stream with server-side cursors, 1,000 rows per fetch.",
        ),
        ("Document the cut-over in RUNBOOK.md.", "Added a cut-over section to docs/RUNBOOK.md."),
        ("Who approves the cut-over?", "Per RUNBOOK.md, Marco Silva (SRE on call) approves."),
    ]
    for q, a in topics:
        b.user(q)
        b.assistant(a)
        if b.rng.random() < 0.5:
            b.tool(
                "run_tests",
                {"path": "tests/", "markers": "not slow"},
                b.test_run(b.rng.randint(300, 900), []),
            )
            b.assistant("Test suite green after that change.")

    # -- 7. release plan --------------------------------------------------------------------
    b.user(
        "Let's plan the release. Window: Thursday 3 December 22:00-23:30 CET. Freeze writes for at most 20 minutes."
    )
    b.tool(
        "read_file",
        {"path": "docs/RUNBOOK.md"},
        "\n".join(
            f"{i + 1}. "
            + b.rng.choice(
                [
                    "Announce the freeze in #billing-ops.",
                    "Stop the sync_tax_rates worker.",
                    "Take a final mysqldump with --single-transaction.",
                    "Run pgloader with the ledger.load config.",
                    "Verify row counts per table.",
                    "Flip DATABASE_URL in the ledgerd-api deployment.",
                    "Smoke test /v2/invoices.",
                    "Re-enable workers.",
                    "Announce the end of the freeze.",
                ]
            )
            for i in range(80)
        ),
    )
    b.assistant(
        "Release plan: Thursday 3 December 22:00-23:30 CET, write freeze <= 20 minutes, pgloader "
        "for the data copy, row-count verification per table, then flip DATABASE_URL. Marco Silva "
        "approves. Rollback: flip DATABASE_URL back; MySQL stays read-only for 7 days."
    )
    b.user("Run a rehearsal of the data copy against staging and show me the pgloader summary.")
    b.tool(
        "run_command",
        {"cmd": "pgloader ledger.load"},
        "\n".join(
            f"{'ledger.' + t:40} {b.rng.randint(1000, 9000000):>12} rows  {b.rng.randint(1, 90)}.{b.rng.randint(100, 999)}s"
            for t in [
                "invoices",
                "line_items",
                "customers",
                "credits",
                "payments",
                "refunds",
                "plans",
                "subscriptions",
                "tax_rates",
                "webhooks",
                "audit_log",
                "exports",
            ]
            * 8
        ),
    )
    b.assistant(
        "Rehearsal copy finished in 11 min 42 s, all row counts match. That fits the 20-minute freeze."
    )

    # -- 8. late questions that depend on early facts ---------------------------------------
    b.user("Quick one: remind me which port and database the staging Postgres uses?")
    b.assistant(
        "Staging Postgres: pg-staging.internal port 6432 (PgBouncer), database ledger_stage."
    )
    b.user("And what was the credit note number we issued to Northwind, and who is their contact?")
    b.assistant(
        "Credit note CN-2026-0458 for 0.01 EUR to Northwind Traders (customer 58213); contact "
        "Jonas Becker, jonas.becker@northwind.example."
    )
    b.user(
        "Last thing for today: write the status update for the LEDG-2417 ticket. Include the deadline, "
        "the rounding decision for INV-20931, the performance numbers, and the release window."
    )
    return b.messages


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    messages = build()
    OUT_FILE.write_text(json.dumps(messages, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(messages)} messages to {OUT_FILE}")


if __name__ == "__main__":
    main()
