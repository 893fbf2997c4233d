"""The benchmark workload: deterministic events over ~1,000 subjects (tests and benches).

``make_events`` draws, for a given seed, events with 1-2 fake candidates each (creates,
reinforcements, supersedes with another value, a few notes) and short realistic contents from
``tests/support/workload_pools.py``; ``stub_events`` adds the same candidates on a
``CANDIDATES:`` line for the OpenAI stub; ``encode`` validates and encodes them as
(event_id, key, value) messages for ``memory.events``.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import random
from typing import Any

from tests.support.workload_pools import CITIES, FILLERS, NOTES, PREDICATES


def make_events(n_total: int, n_subjects: int, tag: str, seed: int = 7) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    projects = ["acme", "globex", "initech", "hooli", "umbrella"]
    subjects = [(projects[i % len(projects)], f"user-{i:04d}") for i in range(n_subjects)]
    state: dict[tuple[str, str], dict[str, Any]] = collections.defaultdict(dict)
    base = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    events = []
    for i in range(n_total):
        key = subjects[rnd.randrange(n_subjects)]
        known = state[key]
        cands: list[dict[str, Any]] = []
        sentences: list[str] = []
        used: set[str] = set()
        for _ in range(rnd.choice((1, 1, 2))):
            r = rnd.random()
            unset = [p for p in PREDICATES if p not in known and p not in used]
            setp = [p for p in known if p not in used]
            if r < 0.05:  # a note (free text), practically always a creation
                stmt = f"{rnd.choice(NOTES)} ({rnd.choice(CITIES)}, #{rnd.randrange(1000)})"
                cands.append({"statement": stmt, "confidence": 0.8})
                sentences.append(f"Note: {stmt.lower()}.")
                continue
            if unset and (r < 0.40 or not setp):
                pred, action = rnd.choice(unset), "create"
                vkey, pool, tpl, _ = PREDICATES[pred]
                v = rnd.choice(pool)
            elif r < 0.72:  # reinforcement: the same canonical value again
                pred, action = rnd.choice(setp), "create"
                vkey, pool, tpl, _ = PREDICATES[pred]
                v = known[pred]
            else:  # supersede with a different value
                pred, action = rnd.choice(setp), "supersede"
                vkey, pool, _, tpl = PREDICATES[pred]
                v = rnd.choice([x for x in pool if x != known[pred]])
            used.add(pred)
            known[pred] = v
            sentence = rnd.choice(tpl).format(v=v)
            sentences.append(sentence)
            cands.append(
                {
                    "predicate": pred,
                    "value": {vkey: v},
                    "statement": sentence,
                    "action": action,
                    "confidence": round(rnd.uniform(0.6, 1.0), 2),
                }
            )
        filler = rnd.choice(FILLERS)
        content = (
            " ".join([*sentences, filler]).strip()
            if rnd.random() < 0.5
            else " ".join([filler, *sentences]).strip()
        )
        events.append(
            {
                "event_id": f"ev-{tag}-{i:07d}",
                "project_id": key[0],
                "subject_id": key[1],
                "occurred_at": (base + dt.timedelta(seconds=i)).isoformat().replace("+00:00", "Z"),
                "kind": "message",
                "role": "user",
                "content": content,
                "source": "bench",
                "metadata": {"fake_candidates": cands, "channel": "chat"},
            }
        )
    return events


def expected_mix(events: list[dict[str, Any]]) -> dict[str, int]:
    mix: collections.Counter[str] = collections.Counter()
    seen: dict[tuple[str, str, str], Any] = {}
    for e in events:
        for c in e["metadata"]["fake_candidates"]:
            if "predicate" not in c:
                mix["note"] += 1
                continue
            k = (e["project_id"], e["subject_id"], c["predicate"])
            if k not in seen:
                mix["create"] += 1
            elif c["action"] == "supersede":
                mix["supersede"] += 1
            else:
                mix["reinforce"] += 1
            seen[k] = c["value"]
    return dict(mix)


def stub_events(n: int, subjects: int, tag: str, seed: int = 7) -> list[dict[str, Any]]:
    """The same events for the fake extractor (``metadata.fake_candidates``) and for the
    OpenAI stub (a ``CANDIDATES:`` line at the end of the content): one input for both."""
    out = []
    for e in make_events(n, subjects, tag, seed=seed):
        cands = e["metadata"]["fake_candidates"]
        e["content"] = f"{e['content']}\nCANDIDATES: {json.dumps(cands, separators=(',', ':'))}"
        out.append(e)
    return out


def encode(events: list[dict[str, Any]]) -> list[tuple[str, str, bytes]]:
    from streams.kafka.sdk import event_message

    return [(e["event_id"], *event_message(e)) for e in events]
