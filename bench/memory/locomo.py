"""LoCoMo through the product: ``python -m bench.memory.locomo --conversation 0 --limit 5``.

One conversation is one subject: every turn an event (``<speaker>: <text>``, at its
session's date), then the first ``--limit`` questions of each of categories 1-4, scored with
LoCoMo's token F1 per category (``bench.memory.runner``; ``score`` there is the substring
match the other sets use). The committed subset: conversation 0 (conv-26, 419 turns) with
the first 5 questions of each category (20).
"""

from __future__ import annotations

from bench.memory import cli
from bench.memory.runner import run
from tests.support import memory_bench as mb


def main(argv: list[str] | None = None) -> int:
    p = cli.parser(__doc__ or "", "locomo10.json")
    p.add_argument("--conversation", type=int, default=0, help="which conversation (0-9)")
    p.add_argument("--limit", type=int, default=5, help="the first N questions of each category")
    args = cli.finish(p.parse_args(argv))
    full = mb.locomo(mb.load_json(args.data), args.conversation)
    bench = mb.Benchmark(full.name, full.events, mb.first_per_category(full.questions, args.limit))
    doc = run(bench, args)
    doc["subset"] = (
        f"conversation {args.conversation}: {len(bench.events)} turns, "
        f"the first {args.limit} questions of each of categories 1-4 ({len(bench.questions)})"
    )
    cli.write(doc, args.label or f"locomo-{args.model}-c{args.conversation}-q{args.limit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
