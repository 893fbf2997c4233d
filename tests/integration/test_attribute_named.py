"""Two attributes of one named person, through a real worker, broker, database and the real
MiniLM embedder at the shipped bounds: a new attribute of the person is created beside the
old ones, never flagged against them or retired by them, although the whole humanised
predicates ("nora fishel home city" / "nora fishel occupation") sit within the unsure band,
and a neighbour whose whole text sits within the "same" bound does not retire the other;
the person's own attribute under another name still meets its old value.

Without the part comparison (``processors.attributes.compared``) each of the later
candidates below lands in a ``possible_same_attribute`` conflict with an earlier one."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.workers import WorkerProcess, event, facts_of, scalar, wait_applied

pytestmark = pytest.mark.integration

# (predicate, value) told in this order about one subject, each as a supersede (the 1.5B
# marks many new facts so): every one is a different attribute of its person.
TOLD = [
    ("nora_fishel_occupation", {"value": "baker"}),
    ("nora_fishel_language", {"value": "Spanish"}),
    ("nora_fishel_home_city", {"value": "Lisbon"}),
    ("jonn_coal_occupation", {"value": "composer"}),
    ("jonn_coal_founder", {"value": "Green Trails"}),
]


def test_attributes_of_one_named_person_stay_apart(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"embedder": "fastembed"})
    with WorkerProcess(s, tmp_path / "w.log") as w:
        for day, (predicate, value) in enumerate(TOLD, start=1):
            cands = [{"predicate": predicate, "value": value, "action": "supersede"}]
            sdk.publish_events(s, [event(f"e{day}", day=day, cands=cands)])
            wait_applied(s, w, day)
        assert facts_of(s, "alice", "active") == dict(TOLD)
        assert scalar(s, "SELECT count(*) FROM conflict_sets") == 0

        # A neighbouring attribute (the whole texts 0.135 apart: "same" at the shipped 0.17)
        # may be asked about, never retire the occupation by itself.
        cands = [{"predicate": "nora_fishel_employer", "value": {"value": "Acme"}}]
        sdk.publish_events(s, [event("e8", day=8, cands=cands)])
        wait_applied(s, w, len(TOLD) + 1)
        assert facts_of(s, "alice", "active")["nora_fishel_occupation"] == {"value": "baker"}
        assert facts_of(s, "alice", "superseded") == {}

        # The same attribute of the person under its own name still meets its old value.
        cands = [
            {
                "predicate": "nora_fishel_occupation",
                "value": {"value": "painter"},
                "action": "supersede",
            }
        ]
        sdk.publish_events(s, [event("e9", day=9, cands=cands)])
        wait_applied(s, w, len(TOLD) + 2)
        assert facts_of(s, "alice", "active")["nora_fishel_occupation"] == {"value": "painter"}
        assert facts_of(s, "alice", "superseded") == {"nora_fishel_occupation": {"value": "baker"}}
