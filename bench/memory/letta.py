"""Letta's core-memory-update set through the product: ``python -m bench.memory.letta --limit 5``.

Each of the first ``--limit`` rows is a subject of its own: its 10 facts, then its
contradicting facts, as events in that order; every question's right answer is the updated
one, and giving the original answer instead counts as stale (``bench.memory.runner``).
"""

from __future__ import annotations

from bench.memory import cli
from bench.memory.runner import run
from tests.support import memory_bench as mb


def main(argv: list[str] | None = None) -> int:
    p = cli.parser(__doc__ or "", "letta_bench_gen_200.jsonl")
    p.add_argument("--limit", type=int, default=5, help="the first N rows")
    args = cli.finish(p.parse_args(argv))
    bench = mb.letta_update(args.data.read_text().splitlines(), args.limit)
    doc = run(bench, args)
    doc["subset"] = (
        f"first {args.limit} rows: {len(bench.events)} events, {len(bench.questions)} questions"
    )
    cli.write(doc, args.label or f"letta-{args.model}-rows{args.limit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
