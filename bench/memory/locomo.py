"""LoCoMo through the product: ``python -m bench.memory.locomo --conversation 0 --limit 5``.

One conversation is one subject: every turn an event (``<speaker>: <text>``, at its
session's date), then the first ``--limit`` questions of each of categories 1-4, scored with
LoCoMo's token F1 per category (``bench.memory.runner``; ``score`` there is the substring
match the other sets use) and, with ``--judge-model``, by an LLM judge (the share it calls
CORRECT, per category: the J score of the Mem0 paper's table). The committed subset:
conversation 0 (conv-26) up to its fourth session (``--sessions 4``: 76 turns, 37 questions
whose evidence lies there) with the first 4 questions of each category (16); the whole
conversation (419 turns) is about an hour and a half of ingest here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.memory import cli
from bench.memory.runner import Answerer, run
from tests.support import memory_bench as mb


def main(argv: list[str] | None = None) -> int:
    p = cli.parser(__doc__ or "", "locomo10.json")
    p.add_argument("--conversation", type=int, default=0, help="which conversation (0-9)")
    p.add_argument("--limit", type=int, default=5, help="the first N questions of each category")
    p.add_argument(
        "--sessions", type=int, default=None, help="only the first S sessions and their questions"
    )
    p.add_argument("--judge-model", default=None, help="an LLM judge's model (J score)")
    p.add_argument("--judge-base-url", default=None, help="its endpoint (default: --base-url)")
    args = cli.finish(p.parse_args(argv))
    full = mb.locomo(mb.load_json(args.data), args.conversation, args.sessions)
    bench = mb.Benchmark(full.name, full.events, mb.first_per_category(full.questions, args.limit))
    doc = run(bench, args)
    if args.judge_model:
        judge(doc, bench.questions, args)
    doc["subset"] = (
        f"conversation {args.conversation}"
        + (f", its first {args.sessions} sessions" if args.sessions else "")
        + f": {len(bench.events)} turns, "
        f"the first {args.limit} questions of each of categories 1-4 ({len(bench.questions)})"
    )
    cli.write(doc, args.label or f"locomo-{args.model}-c{args.conversation}-q{args.limit}")
    return 0


def judge(doc: dict[str, Any], questions: Sequence[mb.Question], args: Any) -> None:
    """Each approach's answers graded by the judge model: the share judged correct, over all
    and per category, and the judge's calls (``approaches.<a>.judge``)."""
    ask = Answerer(args.judge_base_url or args.base_url, args.judge_model, args.timeout, 8)
    for a, figures in doc["approaches"].items():
        verdicts: dict[str, list[bool]] = {}
        for row, q in zip(doc["log"], questions, strict=True):
            right = mb.judged_correct(ask(mb.judge_messages(q.text, q.answers[0], row[a])))
            row[f"{a}_judged"] = right
            for key in ("all", str(q.category)):
                verdicts.setdefault(key, []).append(right)
        figures["judge"] = {
            "model": args.judge_model,
            **{k: round(sum(v) / len(v), 3) for k, v in sorted(verdicts.items())},
        }
    doc["judge_calls"] = ask.figures(len(questions) * max(1, len(doc["approaches"])))


if __name__ == "__main__":
    raise SystemExit(main())
