"""The open question of ``processors.value_now`` on the probes of ``bench.still_true_probes``:
``python -m bench.now_probes [--base-url URL]``.

Each probe of that bench (a message and a known fact, "kept" or "ended" by a careful reader)
is given here the known fact's attribute and value and the linked candidate a careful
extractor would write from the message; the shipped prompt (``value_now.build_prompt``)
asks the model for the attribute's value now and the shipped rule (``value_now.verdict``)
turns the answer into ``replace`` or ``keep``. A ``replace`` of a kept fact retires a true
one: the figure that decides use. Writes ``bench/results/judge_probes/now-<model>.json``.
Temperature 0, one answer per probe.
"""

from __future__ import annotations

import json
from typing import Any

from bench.still_true_probes import ITEMS, chat, written
from processors import value_now
from processors.attribute_judge import OfferedPair
from processors.hygiene_judge import MalformedJudgeAnswer

# One line a probe, in ITEMS' order: attribute | the known value | the candidate's own name
# | its value.
_SHAPES = """
diet | vegetarian | diet_type | vegan
occupation | master's student in economics | employer | Bank of England
work_hours | full time | work_days | Monday to Wednesday
occupation | pharmacist | workplace | hospital pharmacy
german_level | A2 | german_exam | B1
phone | iPhone 12 | new_phone | Pixel 8
job | early shift at a bakery in Leeds | employer | coffee roastery
occupation | accountant | employer | Nubank
employer | Infosys | new_job | data engineer at Swiggy
home_city | Vancouver | home | house in Victoria
work_laptop | ThinkPad running Windows 11 | computer | MacBook Pro
allergies | lactose intolerance | son_allergy | shellfish
living_situation | lives alone in a tiny flat | partner | Javier
laptop_os | Windows 10 | os_upgrade | Windows 11
occupation | pharmacist | retirement | end of September
car | old Volkswagen Golf | new_car | Toyota Corolla
occupation | nurse | side_job | weekend job at a bar
car | Toyota RAV4 | second_car | Fiat
phone | Samsung Galaxy | ereader | Kindle
instrument | guitar | daughter_lessons | piano
languages | Spanish | learning | Italian
pet | dog named Rex | kitten | Pip
exercise | running 20 km a week | gym | climbing gym
occupation | product manager at Spotify | education | part-time MBA
home_city | Hamburg | sister_city | Berlin
employer | Stripe | team | payments team
commute | cycles to work | driving_licence | yes
diet | vegetarian | eats | meat
living_situation | lives with boyfriend Tom | relationship | split up
home | owns a flat in Manchester | living_with | parents in Leeds
phone | iPhone 13 | os | Android
employer | Loop | status | job hunting
"""
SHAPES = [tuple(p.strip() for p in line.split("|")) for line in _SHAPES.strip().splitlines()]
assert len(SHAPES) == len(ITEMS)


def _pair(message: str, shape: tuple[str, ...]) -> OfferedPair:
    attribute, old, own, new = shape
    return OfferedPair(
        set_id="probe",
        project_id="p",
        subject_id="s",
        candidate=attribute,
        candidate_keys=(own,),
        existing=attribute,
        existing_keys=("value",),
        kind="now",
        candidate_value=json.dumps({own: new}),
        candidate_statement=message,
        existing_value=json.dumps(old),
    )


def run(base: str, model: str) -> dict[str, Any]:
    rows = []
    for (message, _statement, still), shape in zip(ITEMS, SHAPES, strict=True):
        q = _pair(message, shape)
        # Offered as the pipeline offers it (``streams.consolidation.jobs.flagged``): another
        # person's attribute is never asked, and waits as "keep".
        asked = value_now.askable({shape[2]: shape[3]}, shape[0])
        text = chat(base, model, value_now.build_prompt(q), 64) if asked else ""
        try:
            now: tuple[str, ...] | None = value_now.parse(text) if asked else None
            verdict = value_now.verdict(now or (), q.candidate_value, q.existing_value)
        except MalformedJudgeAnswer:
            now, verdict = None, "keep"
        rows.append(
            {
                "message": message,
                "attribute": shape[0],
                "known": shape[1],
                "candidate": {shape[2]: shape[3]},
                "still_true": still,
                "asked": asked,
                "answer": text,
                "now": now,
                "verdict": verdict,
                "right": (verdict == "keep") == still,
            }
        )
    return {
        "model": model,
        "items": len(rows),
        "right": sum(r["right"] for r in rows),
        "ended_replaced": sum(r["verdict"] == "replace" for r in rows if not r["still_true"]),
        "ended_items": sum(not r["still_true"] for r in rows),
        # A replace of a fact that still holds retires a true one.
        "wrongly_replaced": sum(r["verdict"] == "replace" for r in rows if r["still_true"]),
        "still_items": sum(r["still_true"] for r in rows),
        "answers": rows,
    }


def main(argv: list[str] | None = None) -> int:
    doc = written(argv, __doc__.splitlines()[0], run, "now")
    print(
        f"{doc['right']}/{doc['items']} right; ended facts replaced "
        f"{doc['ended_replaced']}/{doc['ended_items']}; true facts replaced "
        f"{doc['wrongly_replaced']}/{doc['still_items']}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
