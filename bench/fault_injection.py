#!/usr/bin/env python
"""Fault injection: nothing lost, nothing duplicated, the same facts as a clean run.

    .venv/bin/python -m bench.fault_injection                     # 20,000 events, 5 kills,
                                                                  # DB + broker restart
    .venv/bin/python -m bench.fault_injection --events 2000 --kills 2 --no-broker-restart
    .venv/bin/python -m bench.fault_injection --quick             # the CI size above

(from the repository root). Exit status 0 only when the verdict holds; the counts are printed
(and written as JSON/MD with ``--output``, by default under bench/results/ for the full size,
/tmp otherwise).

The run itself (its own PostgreSQL under ``.stack/fault-<tag>`` and, with the broker
restart, its own broker on 127.0.0.1:19092; a clean and a faulty run of the same events; the
verdict) is ``tests/support/fault_run.py``, shared with the CI-size test
``tests/e2e/test_fault_injection.py``; this script adds the result files.
"""

from __future__ import annotations

import datetime as dt
import json
import signal
import sys
from typing import Any

from bench.harness import RESULTS
from bench.harness.accounting import machine
from tests.support.fault_run import SCRATCH, parse_args, run
from tests.support.fault_verdict import print_counts


def markdown(doc: dict[str, Any]) -> str:
    r = doc["result"]
    c, f, v = r["clean"], r["faulty"], r["verdict"]
    m = doc["machine"]
    faults = "; ".join(
        f"{x['kind']} at {x['at_events_stored']:,} stored (t={x['at_s']} s"
        + (
            f", {x['committed_unpublished_at_kill']} committed changes unpublished"
            if x["kind"] == "kill"
            else f", down {x['down_s']} s"
        )
        + ")"
        for x in f["faults"]
    )
    lines = [
        "# Fault injection",
        "",
        f"Date {doc['date']}, {m['nproc']} CPUs ({m['cpu']}), {m['ram_gib']} GiB RAM. Command: "
        f"`{doc['command']}`.",
        "",
        f"{r['events']:,} events over {r['subjects']:,} subjects (fake extractor, hash embedder), "
        f"seed {r['seed']}: {r['kills']} SIGKILLs, database restart {r['db_restart']}, broker "
        f"restart {r['broker_restart']}; faust session timeout {r['session_timeout_s']} s.",
        "",
        f"Faults: {faults}.",
        f"Events published at {f['publish_rate']:,} events/s during the faulty run (about 10 s "
        "per fault, so each lands mid-stream). "
        f"Worker processes {f['worker_processes']}, unplanned restarts "
        f"{f['unplanned_worker_restarts']}.",
        "",
        "| | clean | faulty |",
        "|---|---|---|",
        f"| events stored | {c['events_stored']:,} | {f['events_stored']:,} |",
        f"| facts | {c['facts']:,} | {f['facts']:,} |",
        f"| facts digest | `{c['facts_digest'][:16]}` | `{f['facts_digest'][:16]}` |",
        f"| duplicate active facts | {c['duplicate_active_facts']} | "
        f"{f['duplicate_active_facts']} |",
        f"| change messages | {c['change_messages']:,} | {f['change_messages']:,} |",
        f"| distinct change ids | {c['change_ids_distinct']:,} | {f['change_ids_distinct']:,} |",
        f"| redelivered change messages | {c['change_redeliveries']} | "
        f"{f['change_redeliveries']} |",
        f"| committed changes never published | {c['outbox_ids_not_published']} | "
        f"{f['outbox_ids_not_published']} |",
        f"| DLQ messages (valid input) | {c['dlq_messages']} ({c['dlq_valid_input']}) | "
        f"{f['dlq_messages']} ({f['dlq_valid_input']}) |",
        f"| retry-topic messages | {c['retry_messages']} | {f['retry_messages']} |",
        f"| subjects in order | {c['orders']['subjects_in_order']:,} | "
        f"{f['orders']['subjects_in_order']:,} |",
        f"| seconds | {c['seconds']} | {f['seconds']} |",
        "",
        f"Change ids missing vs clean {v['change_ids_missing']}, extra {v['change_ids_extra']}.",
        "",
        "Checks: " + ", ".join(f"{k} {'PASS' if ok else 'FAIL'}" for k, ok in v["checks"].items()),
        "",
        f"**Verdict: {'holds' if v['holds'] else 'FAILS'}.**",
        "",
    ]
    return "\n".join(lines)


def _terminate(_sig: int, _frame: Any) -> None:
    raise SystemExit(143)  # so the finally blocks stop our workers, database and broker


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    result = run(args)
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join(
            [".venv/bin/python", "-m", "bench.fault_injection", *(argv or sys.argv[1:])]
        ),
        "result": result,
    }
    print_counts(result)
    full = args.events >= 20000 and args.kills >= 5 and result["broker_restart"]
    out = args.output or (RESULTS if full else SCRATCH) / "fault_injection.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(doc))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0 if result["verdict"]["holds"] else 1


if __name__ == "__main__":
    sys.exit(main())
