"""Per-subject order, checked from the facts' history (tests and benches).

``verify_order`` compares, for every (project, subject, predicate), the chain of facts in the
database (``supersedes_id`` links, ``valid_from``/``valid_to``, statuses, reinforcement
counts) with the chain the events imply in occurred_at order (``expected_chains``); the
active value must be the last event's.
"""

from __future__ import annotations

import collections
import datetime as dt
from typing import Any

from tests.support.workers import rows


def expected_chains(events: list[dict[str, Any]]) -> dict[tuple[str, str, str], list[dict]]:
    """Per (project, subject, predicate): the versions the events imply in occurred_at order.

    A version is ``{"value", "valid_from", "reinforcements"}``; a ``supersede`` with another
    value starts a new version, a ``create`` with the same value reinforces the current one
    (the workload never sends a conflicting ``create``).
    """
    chains: dict[tuple[str, str, str], list[dict[str, Any]]] = collections.defaultdict(list)
    for e in sorted(events, key=lambda x: x["occurred_at"]):
        for c in e["metadata"]["fake_candidates"]:
            if "predicate" not in c:
                continue
            chain = chains[(e["project_id"], e["subject_id"], c["predicate"])]
            if chain and chain[-1]["value"] == c["value"]:
                chain[-1]["reinforcements"] += 1
            elif chain and c.get("action") != "supersede":
                raise ValueError(f"workload has a conflicting create: {e['event_id']}")
            else:
                chain.append(
                    {"value": c["value"], "valid_from": e["occurred_at"], "reinforcements": 0}
                )
    return chains


def ts_text(value: Any) -> str:
    """A timestamp as the events write it (ISO 8601, UTC, ``Z``); anything else as str."""
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    return str(value)


def verify_order(settings: Any, events: list[dict[str, Any]]) -> dict[str, Any]:
    """Every subject's events applied in order, checked against the facts' history."""
    want = expected_chains(events)
    facts = rows(
        settings,
        """SELECT id, project_id, subject_id, predicate, value, status, reinforcement_count,
                  valid_from, valid_to, supersedes_id
           FROM facts WHERE predicate IS NOT NULL ORDER BY valid_from, id""",
    )
    got: dict[tuple[str, str, str], list[dict[str, Any]]] = collections.defaultdict(list)
    for f in facts:
        got[(f["project_id"], f["subject_id"], f["predicate"])].append(f)
    violations: list[str] = []
    subjects_bad: set[tuple[str, str]] = set()

    def bad(key: tuple[str, str, str], why: str) -> None:
        subjects_bad.add(key[:2])
        if len(violations) < 20:
            violations.append(f"{'/'.join(key)}: {why}")

    for key in set(want) | set(got):
        w, g = want.get(key, []), got.get(key, [])
        if [v["value"] for v in w] != [f["value"] for f in g]:
            bad(key, f"values {[f['value'] for f in g]} != expected {[v['value'] for v in w]}")
            continue
        for i, (v, f) in enumerate(zip(w, g, strict=True)):
            last = i == len(w) - 1
            if ts_text(f["valid_from"]) != v["valid_from"]:
                bad(key, f"version {i} valid_from {ts_text(f['valid_from'])} != {v['valid_from']}")
            if f["status"] != ("active" if last else "superseded"):
                bad(key, f"version {i} status {f['status']}")
            if f["reinforcement_count"] != v["reinforcements"]:
                bad(
                    key,
                    f"version {i} reinforced {f['reinforcement_count']}x, "
                    f"want {v['reinforcements']}",
                )
            if i and f["supersedes_id"] != g[i - 1]["id"]:
                bad(key, f"version {i} supersedes {f['supersedes_id']}, not version {i - 1}")
            if not last and ts_text(f["valid_to"]) != w[i + 1]["valid_from"]:
                bad(key, f"version {i} valid_to {ts_text(f['valid_to'])} != next valid_from")
            if last and f["valid_to"] is not None:
                bad(key, "active version has a valid_to")
    subjects = {k[:2] for k in want}
    return {
        "subject_predicate_chains": len(want),
        "fact_versions_expected": sum(len(v) for v in want.values()),
        "fact_versions_found": sum(len(v) for v in got.values()),
        "subjects": len(subjects),
        "subjects_in_order": len(subjects - subjects_bad),
        "violations": len(subjects_bad),
        "examples": violations,
        "ok": not subjects_bad and set(got) <= set(want),
    }
