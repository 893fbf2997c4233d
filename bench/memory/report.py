"""``bench/results/memory/README.md``: every result file of ``bench/results/memory`` as one
table, beside the peers' published figures (quoted, not measured here).

Invariants: rebuilt from the result files only; a figure not in a file is not in the table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PEERS = """\
Published figures (not measured here), FactConsolidation single-hop / multi-hop, GPT-4o-mini
backbone (MemoryAgentBench, arXiv 2507.05257): Mem0 18 / 2, Zep 7 / 3, Cognee 28 / 3,
MemGPT 28 / 3, HippoRAG-v2 54 / 5, BM25 48-56 / 3, GPT-4o full context 60 / 5 (262K); at 6K,
GPT-4o full context 92 / 28; conflicts resolved in code ("the latest wins") 78 single-hop.
LoCoMo temporal, LLM judge, GPT-4o-mini (Mem0 paper, arXiv 2504.19413, Table 1): Mem0 55.5,
Mem0-graph 58.1, Zep 49.3, LangMem 23.4, OpenAI memory 21.7 (a judge's share, not token F1).
"""


def _row(name: str, doc: dict[str, Any]) -> list[str]:
    out = []
    for approach, fig in doc["approaches"].items():
        ing = doc.get({"consolidator": "ingest", "mem0": "mem0_ingest"}.get(approach, ""), {})
        per_event = (
            f"{ing.get('prompt_tokens_per_event')} + {ing.get('completion_tokens_per_event')}"
            if ing.get("prompt_tokens_per_event") is not None
            else "-"
        )
        f1 = fig.get("f1") or {}
        out.append(
            f"| {name} | {doc['model']} | {approach} | {fig['score']} | {fig['right']}/"
            f"{doc['questions']} | {fig['stale']} | {fig.get('context_has_gold', '-')} | "
            f"{per_event} | "
            f"{fig['answer_prompt_tokens_per_question']} | "
            f"{ing.get('seconds_per_event', '-')} | {f1.get('all', '-')} | {f1.get('2', '-')} |"
        )
    return out


def write_summary(out: Path) -> str:
    lines = [
        "# Memory benchmarks, end to end (bench/memory)",
        "",
        "Written by `python -m bench.memory.<name>` from the result files here; the subsets",
        "and commands are in the bench README.",
        "",
        "| result | model | approach | score | right | stale | a right answer in the context"
        " | ingest tokens/event (prompt + completion) | answer prompt tokens/question"
        " | ingest s/event | token F1 (LoCoMo) | temporal F1 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for path in sorted(out.glob("*.json")):
        doc = json.loads(path.read_text())
        if "approaches" in doc:
            lines += _row(path.stem, doc)
    text = "\n".join(lines) + "\n\n" + PEERS
    (out / "README.md").write_text(text)
    return text
