"""Helpers of tests/integration/test_read_side.py: the HTTP client with the API token, and
the history it publishes (p1/alice moving city, an open conflict, the same subject id in
p2) with the instants at which each home_city value was true."""

from __future__ import annotations

from typing import Any

from tests.support.http import request
from tests.support.workers import WorkerProcess, event

TOKEN = "s3cret-token"
SUPERSEDE = "supersede"


def http(
    w: WorkerProcess, path: str, token: str | None = TOKEN, method: str = "GET", **params: Any
) -> tuple[int, bytes, str]:
    return request(w.url, path, token, method, params or None, timeout=10)


def home(city: str, action: str = "create") -> dict[str, Any]:
    return {"predicate": "home_city", "value": {"city": city}, "action": action}


def history() -> list[dict[str, Any]]:
    """p1/alice: Paris (day 1) -> Lyon (3) -> Nice (5) -> Rome (7): three supersessions;
    an employer; an open conflict on favorite_color; the same subject id in p2."""
    return [
        event("e1", day=1, content="I live in Paris near the river", cands=[home("Paris")]),
        event(
            "e2",
            day=2,
            content="I work at Acme as a baker",
            cands=[{"predicate": "employer", "value": {"name": "Acme"}}],
        ),
        event(
            "e3",
            day=2,
            content="my favorite color is blue",
            cands=[{"predicate": "favorite_color", "value": {"color": "blue"}}],
        ),
        event("e4", day=3, content="I moved to Lyon for work", cands=[home("Lyon", SUPERSEDE)]),
        event(
            "e5",
            day=4,
            content="actually my favorite color is red",
            cands=[{"predicate": "favorite_color", "value": {"color": "red"}}],
        ),
        event("e6", day=5, content="I moved to Nice by the sea", cands=[home("Nice", SUPERSEDE)]),
        event("e7", day=7, content="I moved to Rome last week", cands=[home("Rome", SUPERSEDE)]),
        # A rejected candidate, so the counter shows up in /metrics.
        event("e8", day=8, content="noise", cands=[{"predicate": "Bad Predicate", "value": {}}]),
        # Same subject id, other project: must never leak into p1's answers.
        event(
            "x1",
            project="p2",
            day=2,
            content="I live in Oslo, secret of project two",
            cands=[home("Oslo")],
        ),
    ]


def at(day: int, hour: int = 12) -> str:
    return f"2026-01-{day:02d}T{hour:02d}:00:00Z"


# instant -> the home_city value true then (None: nothing known yet)
INSTANTS = {
    "2025-12-31T12:00:00Z": None,  # before the first fact
    at(2): "Paris",
    at(3, 10): "Lyon",  # exactly when Lyon began: valid_from is inclusive, valid_to exclusive
    at(4): "Lyon",
    at(6): "Nice",
    at(9): "Rome",
}


def _homes(facts: list[dict[str, Any]]) -> list[str]:
    return [f["value"]["city"] for f in facts if f["predicate"] == "home_city"]
