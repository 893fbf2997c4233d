"""MemoryAgentBench FactConsolidation through the product:
``python -m bench.memory.factconsolidation --limit 40``.

The 455 numbered facts of the 6K context become one subject's events, one per fact in their
order (a later fact overrides an earlier contradicting one); then the first ``--limit``
questions of the split are answered from ``/v1/context`` and from the baselines
(``bench.memory.runner``). Metric: normalized substring exact match, the benchmark's own.
"""

from __future__ import annotations

from bench.memory import cli
from bench.memory.runner import run
from tests.support import memory_bench as mb


def main(argv: list[str] | None = None) -> int:
    p = cli.parser(__doc__ or "", "factconsolidation_6k.json")
    p.add_argument("--split", choices=["sh", "mh"], default="sh", help="single- or multi-hop")
    p.add_argument("--limit", type=int, default=40, help="the first N questions")
    args = cli.finish(p.parse_args(argv))
    source = f"factconsolidation_{args.split}_6k"
    bench = mb.factconsolidation(mb.load_json(args.data), source, args.limit)
    doc = run(bench, args)
    doc["subset"] = (
        f"{source}: all {len(bench.events)} facts, first {len(bench.questions)} questions"
    )
    cli.write(doc, args.label or f"factconsolidation-{args.split}-{args.model}-q{args.limit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
