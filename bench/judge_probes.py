"""The link step's and the value judge's prompts on hand-written probes, against a real
model: ``python -m bench.judge_probes [--base-url URL] [--model NAME] [--repeat N]``.

Each probe is asked ``--repeat`` times (a local server's answers vary between runs: its prompt
cache changes the numerics) through the product's own prompt builders and parsers
(``processors.attribute_link``, ``processors.value_judge``), and scored against what a careful
reader answers. Writes ``bench/results/judge_probes/<model>.json``. The probes are this
file's own sentences (some restate the extraction set's tune messages, none its holdout's).
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.request
from typing import Any

from bench.harness import RESULTS
from processors import attribute_link, value_judge
from processors.attribute_judge import OfferedPair
from schemas.facts import ExtractedFact
from tests.support.facts import make_fact

# (known "predicate=value" list, message, new "predicate=value" list, expected {new: known})
LINKS: list[tuple[list[str], str, list[str], dict[str, str]]] = [
    (
        ["diet=vegetarian", "home_city=Munich", "occupation=chemistry teacher"],
        "I went fully vegan in May and I feel great.",
        ["veganism=yes", "feelings=great"],
        {"veganism": "diet"},
    ),
    (
        ["device=ThinkPad X1", "favorite_editor=Neovim", "os=Arch Linux"],
        "I gave up on Arch, too much maintenance. I'm on Fedora now.",
        ["linux_distro=Fedora"],
        {"linux_distro": "os"},
    ),
    (
        ["employer=Infosys", "skills=SQL, Tableau", "daughter_priya_age=7"],
        "I finally left Infosys. Starting Monday I'm a data engineer at Swiggy.",
        ["company=Swiggy"],
        {"company": "employer"},
    ),
    (
        ["language=Spanish", "occupation=nurse"],
        "Actually, you can switch to English, I'm practising it for an exam.",
        ["english_practice=exam"],
        {},
    ),
    (
        ["duolingo_streak=200", "language_learning_tool=Duolingo"],
        "I wonder if I'd like living in Montreal.",
        ["interest=living in Montreal"],
        {},
    ),
    (
        ["age=34", "dislikes=cilantro"],
        "I signed up for a triathlon in September!",
        ["event=triathlon"],
        {},
    ),
    (
        ["favorite_band=Radiohead", "home_city=Leeds"],
        "These days I mostly listen to Big Thief.",
        ["music=Big Thief"],
        {"music": "favorite_band"},
    ),
]

# (attribute, earlier value, newer value, the newer message, the careful reader's yes)
VALUES: list[tuple[str, Any, Any, str, bool]] = [
    (
        "diet",
        "vegetarian",
        {"veganism": "yes"},
        "I went fully vegan in May and I feel great.",
        True,
    ),
    (
        "os",
        "Arch Linux",
        "Arch",
        "I gave up on Arch, too much maintenance. I'm on Fedora now.",
        False,
    ),
    (
        "os",
        "Arch Linux",
        "Fedora",
        "I gave up on Arch, too much maintenance. I'm on Fedora now.",
        True,
    ),
    ("age", 34, 35, "Just had my birthday, 35 now!", True),
    ("language", "Spanish", "English", "Actually, you can switch to English for now.", True),
    ("occupation", "nurse", "exam", "Actually, you can switch to English, I have an exam.", False),
    ("skills", "SQL, Tableau", "Python", "I also picked up some Python last month.", False),
    ("home_city", "Munich", "Berlin", "My sister just moved to Berlin.", False),
    ("home_city", "New York City", "Seattle", "Quick update: I moved to Seattle last month.", True),
    ("employee_count", 3, 5, "We hired two more people, so five employees now.", True),
    ("home_city", "Leeds", "Paris", "I'd love to live in Paris someday.", False),
    ("favorite_band", "Radiohead", "Big Thief", "These days I mostly listen to Big Thief.", True),
    ("pet", "dog", "cat", "My neighbour's cat keeps visiting.", False),
    ("employer", "Infosys", "Swiggy", "I left Infosys. Starting Monday I'm at Swiggy.", True),
    ("car", "Toyota Corolla", "Tesla", "Should I buy a Tesla?", False),
]


def _ask(base: str, model: str, messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
    body = {
        "model": model,
        "temperature": 0,
        "max_tokens": 200,
        "response_format": {"type": "json_object", "schema": schema},
        "messages": messages,
    }
    request = urllib.request.Request(
        f"{base}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=600) as answer:
        return str(json.load(answer)["choices"][0]["message"]["content"])


def _pairs(items: list[str]) -> list[tuple[str, str]]:
    return [(p, v) for p, v in (i.split("=", 1) for i in items)]


def run_links(base: str, model: str) -> list[dict[str, Any]]:
    out = []
    for known_items, message, new_items, expected in LINKS:
        known = [
            make_fact(id=f"k{i}", predicate=p, value={"value": v}, statement=None)
            for i, (p, v) in enumerate(_pairs(known_items))
        ]
        cands = [ExtractedFact(predicate=p, value={"value": v}) for p, v in _pairs(new_items)]
        text = _ask(
            base,
            model,
            attribute_link.build_prompt(message, known, cands),
            attribute_link.JSON_SCHEMA,
        )
        try:
            links = attribute_link.parse(text, known, cands)
        except attribute_link.MalformedLinks:
            links = {}
        names = {f.id: f.predicate for f in known}
        got = {cands[i].predicate: names[fid] for i, fid in links.items()}
        out.append({"message": message, "expected": expected, "got": got, "ok": got == expected})
    return out


def run_values(base: str, model: str) -> list[dict[str, Any]]:
    out = []
    for attribute, earlier, newer, said, yes in VALUES:
        q = OfferedPair(
            set_id="s",
            project_id="p",
            subject_id="u",
            candidate=attribute,
            candidate_keys=(),
            existing=attribute,
            existing_keys=(),
            kind="value",
            candidate_id="c",
            candidate_value=json.dumps(newer, separators=(",", ":")),
            candidate_statement=said,
            existing_value=json.dumps(earlier),
        )
        text = _ask(base, model, value_judge.build_prompt(q), value_judge.JSON_SCHEMA)
        try:
            verdict = value_judge.parse(text)
        except ValueError:
            verdict = "malformed"
        replaced = verdict == "replace"
        out.append(
            {
                "said": said,
                "newer": newer,
                "expected_yes": yes,
                "got": verdict,
                "ok": replaced == yes,
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base-url", default="http://127.0.0.1:8088/v1")
    p.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args(argv)
    t0 = time.monotonic()
    rounds = [
        {
            "links": run_links(args.base_url, args.model),
            "values": run_values(args.base_url, args.model),
        }
        for _ in range(args.repeat)
    ]
    summary = {
        "model": args.model,
        "repeat": args.repeat,
        "links_right": [sum(r["ok"] for r in x["links"]) for x in rounds],
        "links": len(LINKS),
        "values_right": [sum(r["ok"] for r in x["values"]) for x in rounds],
        "values_wrong_yes": [
            sum(1 for r in x["values"] if not r["ok"] and r["got"] == "replace") for x in rounds
        ],
        "values": len(VALUES),
        "seconds": round(time.monotonic() - t0, 1),
    }
    out = RESULTS / "judge_probes" / f"{args.model}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**summary, "rounds": rounds}, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
