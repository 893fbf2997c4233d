"""Can the local model tell whether a message ended a known fact? Probes for the one value
conflict the judge is never asked about: a linked value under its own name
(``processors.value_judge.askable``). ``python -m bench.still_true_probes [--base-url URL]``.

A linked candidate ("phone = Pixel 8" linked to ``device = iPhone 12``) is right only when the
message ended the known fact. Instead of comparing two values, the model is asked about the
known fact's own statement, in three framings (``FRAMINGS``), each with three worked examples:
is it still true after the message, does the message say it is no longer true, are both true
or only the new message. Scored against a careful reader on ``ITEMS``: 16 restate the tune
split's linked conflicts (tests/support/extraction_set.json), the rest are this file's own
sentences, half of them a new fact beside an old one that stays true. Writes
``bench/results/judge_probes/still-true-<model>.json``. Temperature 0, one answer per item.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from bench.harness import RESULTS
from tests.support.llm_replay import post_chat

# Two lines a probe: the message, then (indented) the known fact's statement | "kept" if it is
# still true after the message, "ended" if not.
_PROBES = """
I went fully vegan in May and I feel great.
    The user is vegetarian. | ended
I graduated last month and now I'm a junior analyst at the Bank of England.
    The user is doing a master's in economics. | ended
I went part-time in March, I only work Mondays to Wednesdays now.
    The user works full time. | ended
Big change: I moved to Vancouver in August and I'm working at a hospital pharmacy here.
    The user works as a pharmacist. | kept
I passed my B1 German exam today!
    The user is at A2 level in German. | ended
My iPhone died last week so I got a Pixel 8.
    The user uses an iPhone 12. | ended
I got a new job at a coffee roastery, starting Monday.
    The user works the early shift at a bakery in Leeds. | ended
I quit Deloitte in May. I'm at a fintech called Nubank now, same kind of work.
    The user works as an accountant. | kept
I finally left Infosys. Starting Monday I'm a data engineer at Swiggy.
    The user works at Infosys. | ended
We finally bought a small house in Victoria, moved in on Saturday!
    The user lives in Vancouver. | ended
IT replaced my ThinkPad with a MacBook Pro last week.
    The user works with a ThinkPad laptop running Windows 11. | ended
My son Eli turns out to be allergic to shellfish, so no shrimp either please.
    The user is lactose intolerant. | kept
I got married in September! Javier moved in with me.
    The user lives alone in a tiny flat. | ended
I upgraded the laptop to Windows 11 over the weekend.
    The user's laptop runs Windows 10. | ended
I retired at the end of September, no more pharmacy shifts for me!
    The user is a pharmacist. | ended
My Golf got totalled in a crash, nobody was hurt. I'm driving a Toyota Corolla now.
    The user drives an old Volkswagen Golf. | ended
I picked up a weekend job at a bar to save for a trip.
    The user works as a nurse. | kept
We got a second car, a little Fiat for my wife.
    The user drives a Toyota RAV4. | kept
I bought a Kindle, mostly for reading in bed.
    The user uses a Samsung Galaxy phone. | kept
My daughter started piano lessons this week.
    The user plays the guitar. | kept
I've been learning some Italian on the side.
    The user speaks Spanish fluently. | kept
We adopted a kitten called Pip!
    The user has a dog named Rex. | kept
I joined a climbing gym near the office.
    The user runs 20 km a week. | kept
I'm doing a part-time MBA on weekends now.
    The user works as a product manager at Spotify. | kept
My sister moved to Berlin last month.
    The user lives in Hamburg. | kept
I switched teams, I'm on the payments team now.
    The user works at Stripe. | kept
Finally got my driving licence!
    The user cycles to work. | kept
I've started eating meat again after six years.
    The user is vegetarian. | ended
We split up in March, I'm living on my own now.
    The user lives with their boyfriend Tom. | ended
I sold my flat and moved in with my parents in Leeds for a while.
    The user owns a flat in Manchester. | ended
I'm on Android now, the iPhone was too expensive to fix.
    The user uses an iPhone 13. | ended
The startup folded, so I'm job hunting.
    The user works at a startup called Loop. | ended
"""
_LINES = _PROBES.strip().splitlines()
ITEMS: list[tuple[str, str, bool]] = [
    (message.strip(), known.split(" | ")[0].strip(), known.split(" | ")[1].strip() == "kept")
    for message, known in zip(_LINES[::2], _LINES[1::2], strict=True)
]

# Worked examples: (message, statement, still true).
EXAMPLES = (
    ("I started my new job at Globex on Monday.", "The user works at Acme Corp.", False),
    ("My brother just bought a Tesla.", "The user drives a Honda Civic.", True),
    ("I've learned some German too.", "The user speaks French.", True),
)

# name -> (the answers for still true / ended, the question)
FRAMINGS: dict[str, tuple[tuple[str, str], str]] = {
    "still_true": (
        ("yes", "no"),
        "Message from the user: {m}\nAfter this message, is it still true that: {s}",
    ),
    "no_longer": (
        ("no", "yes"),
        "Message from the user: {m}\nDoes this message say that this is no longer true: {s}",
    ),
    "both_or_new": (
        ("both", "only the new"),
        "Known fact: {s}\nNew message from the user: {m}\n"
        "Are both true now, or only the new message?",
    ),
}


def chat(base: str, model: str, messages: list[dict[str, str]], max_tokens: int) -> str:
    """One JSON-mode completion at temperature 0: the answer's text."""
    body = {
        "model": model,
        "messages": messages,
        "temperature": 0,
        "max_tokens": max_tokens,
        "response_format": {"type": "json_object"},
    }
    return post_chat(base, body, 600)


def _ask(base: str, model: str, framing: str, message: str, statement: str) -> str:
    (kept, ended), question = FRAMINGS[framing]
    choices = " | ".join(f'"{a}"' for a in (kept, ended))
    messages = [
        {
            "role": "system",
            "content": f'You check a user\'s memory. Answer only JSON: {{"answer": {choices}}}.',
        }
    ]
    for m, s, still in EXAMPLES:
        messages.append({"role": "user", "content": question.format(m=m, s=s)})
        answer = kept if still else ended
        messages.append({"role": "assistant", "content": json.dumps({"answer": answer})})
    messages.append({"role": "user", "content": question.format(m=message, s=statement)})
    text = chat(base, model, messages, 16)
    try:
        return str(json.loads(text)["answer"]).strip().lower()
    except (ValueError, KeyError, TypeError):
        return "?"


def run(base: str, model: str) -> dict[str, Any]:
    out: dict[str, Any] = {"model": model, "items": len(ITEMS), "framings": {}}
    for framing, ((kept, ended), _q) in FRAMINGS.items():
        rows = []
        for message, statement, still in ITEMS:
            answer = _ask(base, model, framing, message, statement)
            rows.append(
                {
                    "message": message,
                    "statement": statement,
                    "still_true": still,
                    "answer": answer,
                    "right": answer == (kept if still else ended),
                }
            )
        out["framings"][framing] = {
            "right": sum(r["right"] for r in rows),
            "ended_right": sum(r["right"] for r in rows if not r["still_true"]),
            "ended_items": sum(not r["still_true"] for r in rows),
            # A wrong "ended" retires a true fact: the figure that decides use.
            "wrongly_ended": sum(r["answer"] == ended for r in rows if r["still_true"]),
            "still_items": sum(r["still_true"] for r in rows),
            "answers": rows,
        }
    return out


def written(
    argv: list[str] | None, description: str, probe: Callable[[str, str], dict[str, Any]], name: str
) -> dict[str, Any]:
    """A probe bench's run: ``--base-url`` and ``--model`` parsed, ``probe`` run, its result
    written to ``bench/results/judge_probes/<name>-<model>.json`` and returned."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--base-url", default="http://127.0.0.1:8088/v1")
    p.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    args = p.parse_args(argv)
    doc = probe(args.base_url, args.model)
    path = RESULTS / "judge_probes" / f"{name}-{args.model}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def main(argv: list[str] | None = None) -> int:
    doc = written(argv, __doc__.splitlines()[0], run, "still-true")
    for name, f in doc["framings"].items():
        print(
            f"{name}: {f['right']}/{doc['items']} right; ended facts called ended "
            f"{f['ended_right']}/{f['ended_items']}; true facts called ended "
            f"{f['wrongly_ended']}/{f['still_items']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
