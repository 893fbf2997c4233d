"""Public memory benchmarks as RawEvents and questions, and their own scoring: the pure part
of ``bench/memory`` (the runners there add the worker, the model and the baselines), here so
that unit tests can check it without a model (tests never import bench).

Invariants:
- Pure: data in, events / questions / scores out; no clock, no randomness. An event's id
  is ``<subject>:<n>`` with ``n`` its position in the benchmark's history, and its time is
  a fixed start plus one minute per position (LoCoMo: its session's date plus one minute per
  turn), so history order is time order and a later fact is always the newer one.
- Data files are read from a path the caller gives (``../shared/benchdata`` by default in
  the runners) and never copied into the repository.
- Scores are the benchmarks' own: FactConsolidation (MemoryAgentBench) counts an answer
  right when a normalized gold answer is a substring of the normalized prediction; the Letta
  update set counts the updated answer right and the original answer, given instead, stale;
  LoCoMo uses token F1 (per category too; its adversarial category 5 has no answer and is
  left out). Normalization is SQuAD's (lower case, no punctuation, no articles,
  single spaces).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

START = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
PROJECT = "memorybench"
_FACT_LINE = re.compile(r"^\s*(\d+)\.\s+(.*\S)\s*$")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalization: lower case, punctuation and articles removed, one space."""
    text = _ARTICLES.sub(" ", text.lower().translate(_PUNCT))
    return " ".join(text.split())


def substring_match(prediction: str, golds: Iterable[str]) -> bool:
    """MemoryAgentBench's ``substring_exact_match``: some normalized gold answer occurs in
    the normalized prediction. An empty gold never matches (it would match anything)."""
    pred = normalize_answer(prediction)
    return any((g := normalize_answer(gold)) and g in pred for gold in golds)


def token_f1(prediction: str, gold: str) -> float:
    """LoCoMo's token F1 of the normalized prediction against the normalized gold."""
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = sum((Counter(p) & Counter(g)).values())
    if not p or not g or common == 0:
        return float(p == g)
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


@dataclass(frozen=True)
class Question:
    id: str
    subject: str
    text: str
    answers: tuple[str, ...]  # any of them is right
    stale: tuple[str, ...] = ()  # the superseded answers (update sets only)
    category: int | None = None  # LoCoMo's question category (1-4)


@dataclass(frozen=True)
class Benchmark:
    name: str
    events: tuple[dict[str, Any], ...]  # RawEvent dicts in history order
    questions: tuple[Question, ...]


def event(subject: str, n: int, content: str, **extra: Any) -> dict[str, Any]:
    """The RawEvent of the ``n``-th item of ``subject``'s history."""
    return {
        "event_id": f"{subject}:{n}",
        "project_id": PROJECT,
        "subject_id": subject,
        "occurred_at": (START + dt.timedelta(minutes=n)).isoformat(),
        "role": "user",
        "content": content,
        **extra,
    }


def numbered_facts(context: str) -> list[tuple[int, str]]:
    """The ``N. fact`` lines of a MemoryAgentBench context, in their order (other lines,
    such as the "Here is a list of facts:" header, are not facts)."""
    out = []
    for line in context.splitlines():
        m = _FACT_LINE.match(line)
        if m:
            out.append((int(m.group(1)), m.group(2)))
    return out


def factconsolidation(
    doc: dict[str, Any], source: str = "factconsolidation_sh_6k", questions: int | None = None
) -> Benchmark:
    """One FactConsolidation row (``source`` names it) as one subject's history: every
    numbered fact an event, numbered by its position; the first ``questions`` questions."""
    rows = [r for r in doc["data"] if r.get("metadata", {}).get("source") == source]
    if len(rows) != 1:
        raise ValueError(f"{source!r}: expected one row, found {len(rows)}")
    row = rows[0]
    subject = source.replace("_", "-")
    events = tuple(event(subject, n, text) for n, text in numbered_facts(row["context"]))
    qs = tuple(
        Question(f"{subject}:q{i}", subject, q, tuple(a if isinstance(a, list) else [a]))
        for i, (q, a) in enumerate(zip(row["questions"], row["answers"], strict=True))
    )
    return Benchmark(source, events, qs[:questions])


def _unquote(text: str) -> str:
    text = text.strip()
    return text[1:-1].strip() if len(text) > 1 and text[0] == text[-1] == '"' else text


def letta_update(lines: Iterable[str], rows: int | None = None) -> Benchmark:
    """Letta's core-memory-update set: per row a subject of its own whose history is the
    row's facts, then its contradicting facts; each question's right answer is the
    contradicting (updated) one, and the original answer is stale."""
    events: list[dict[str, Any]] = []
    questions: list[Question] = []
    for i, line in enumerate(x for x in lines if x.strip()):
        if rows is not None and i >= rows:
            break
        row = json.loads(line)
        subject = f"letta-{i}"
        history = [*row["facts"], *(_unquote(c) for c in row["contradicting_facts"])]
        events += [event(subject, n, text) for n, text in enumerate(history) if text]
        for j, (q, old, new) in enumerate(
            zip(row["question"], row["answer"], row["contradicting_answers"], strict=True)
        ):
            questions.append(Question(f"{subject}:q{j}", subject, q, (new,), (old,)))
    return Benchmark("letta_core_memory_update", tuple(events), tuple(questions))


def _session_start(raw: object, fallback: dt.datetime) -> dt.datetime:
    try:
        when = dt.datetime.strptime(str(raw).strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return fallback
    return when.replace(tzinfo=dt.UTC)


def locomo(
    samples: Sequence[dict[str, Any]], conversation: int = 0, sessions: int | None = None
) -> Benchmark:
    """One LoCoMo conversation as one subject's history: every turn an event, in session
    order, at its session's date plus one minute per turn, its content ``<speaker>: <text>``
    (and the caption of a shared photo, as the dataset gives it); every question of
    categories 1-4 with its answer (category 5, adversarial, has none and is left out).
    With ``sessions``, only the first that many sessions, and only the questions whose
    evidence turns all lie in them."""
    sample = samples[conversation]
    subject = f"locomo-{sample['sample_id']}"
    conv = sample["conversation"]
    events: list[dict[str, Any]] = []
    when = START
    n = 1
    while isinstance(conv.get(f"session_{n}"), list) and (sessions is None or n <= sessions):
        when = _session_start(conv.get(f"session_{n}_date_time"), when + dt.timedelta(days=1))
        for i, turn in enumerate(conv[f"session_{n}"]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            ev = event(subject, len(events), text)
            ev["occurred_at"] = (when + dt.timedelta(minutes=i)).isoformat()
            events.append(ev)
        n += 1
    qs = tuple(
        Question(f"{subject}:q{i}", subject, qa["question"], (str(qa["answer"]),), (), cat)
        for i, qa in enumerate(sample["qa"])
        if (cat := int(qa.get("category", 0))) in (1, 2, 3, 4)
        and "answer" in qa
        and (sessions is None or _evidence_within(qa.get("evidence"), sessions))
    )
    return Benchmark("locomo", tuple(events), qs)


def first_per_category(questions: Sequence[Question], n: int) -> tuple[Question, ...]:
    """The first ``n`` questions of each category, in their order."""
    seen: Counter[int | None] = Counter()
    out = []
    for q in questions:
        seen[q.category] += 1
        if seen[q.category] <= n:
            out.append(q)
    return tuple(out)


_EVIDENCE = re.compile(r"D(\d+):")


def _evidence_within(evidence: object, sessions: int) -> bool:
    """Whether a question's evidence turns ("D3:12") name some session, all up to
    ``sessions``."""
    found = [
        int(m)
        for e in (evidence if isinstance(evidence, list) else [])
        for m in _EVIDENCE.findall(str(e))
    ]
    return bool(found) and max(found) <= sessions


def f1_by_category(rows: Iterable[tuple[str, Question]]) -> dict[str, Any]:
    """LoCoMo's token F1 of each prediction against its question's answer: the mean over
    all and per category (``{"all": ..., "1": ..., ...}``, rounded to 3 places)."""
    scores: dict[str, list[float]] = {}
    for prediction, q in rows:
        f1 = token_f1(prediction, q.answers[0]) if q.answers else 0.0
        for key in ("all", str(q.category)):
            scores.setdefault(key, []).append(f1)
    return {k: round(sum(v) / len(v), 3) for k, v in sorted(scores.items())}


JUDGE_SYSTEM = (
    "You grade an answer to a question about a conversation against the gold answer. The "
    "answer is CORRECT when it names the same thing as the gold answer (wording, detail and "
    "the way a date is written may differ), WRONG otherwise. Reply with one word."
)


def judge_messages(question: str, gold: str, answer: str) -> list[dict[str, str]]:
    """The LLM judge's request for one answer (LoCoMo's J score, when a judge is given)."""
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {
            "role": "user",
            "content": f"Question: {question}\nGold answer: {gold}\nAnswer: {answer}\n"
            "CORRECT or WRONG?",
        },
    ]


def judged_correct(reply: str) -> bool:
    """A judge's reply read strictly: CORRECT said, WRONG not (anything else is wrong)."""
    said = reply.upper()
    return "CORRECT" in said and "WRONG" not in said and "INCORRECT" not in said


def is_stale(prediction: str, q: Question) -> bool:
    """The prediction gives a superseded answer and not the current one."""
    return (
        bool(q.stale)
        and substring_match(prediction, q.stale)
        and not (substring_match(prediction, q.answers))
    )


ANSWER_SYSTEM = (
    "Answer the question from the memory below only. Reply with the answer alone, a few "
    "words, no sentence. When the memory holds two answers, the later one is current."
)


def answer_messages(context: str, question: str) -> list[dict[str, str]]:
    """The answering request, the same for the product and every baseline: the memory
    first (so a server that caches a prompt's prefix reuses it across questions)."""
    return [
        {"role": "system", "content": ANSWER_SYSTEM},
        {"role": "user", "content": f"Memory:\n{context.strip()}\n\nQuestion: {question}"},
    ]


def fit_recent(items: Sequence[str], budget_chars: int) -> list[str]:
    """The latest ``items`` whose lines fit in ``budget_chars``, in their order: the full
    context baseline keeps the end of the history, as a chat window that drops its start."""
    kept: list[str] = []
    used = 0
    for text in reversed(items):
        used += len(text) + 1
        if used > budget_chars:
            break
        kept.append(text)
    return kept[::-1]


def load_json(path: Path) -> Any:
    return json.loads(path.read_text())


CONTEXT_MODES = ("vector", "lexical", "hybrid")


def retrieval_by_mode(
    context: Callable[[Question, str], str], questions: Sequence[Question]
) -> dict[str, dict[str, Any]]:
    """The retrieval step per ``/v1/context`` mode (no LLM): of the questions, those whose
    context (``context(question, mode)``) holds a right answer, and those whose context holds
    a superseded answer and no current one (nothing right to give)."""
    out: dict[str, dict[str, Any]] = {}
    for mode in CONTEXT_MODES:
        texts = [(context(q, mode), q) for q in questions]
        out[mode] = {
            "questions": len(texts),
            "context_has_gold": sum(substring_match(t, q.answers) for t, q in texts),
            "stale_only": sum(is_stale(t, q) for t, q in texts),
            "context_chars_mean": round(sum(len(t) for t, _ in texts) / max(1, len(texts)), 1),
        }
    return out
