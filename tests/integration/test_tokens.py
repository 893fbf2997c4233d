"""Project-scoped tokens against a real worker, broker and database: the CLI stores only
digests and never prints a secret twice; over tokens x projects x routes no request reads or
writes a project outside its token's scope (403, no data, nothing published), a revoked or
unknown token is a 401, and the admin token keeps every right.

The oracle here is written from the contract, not imported from processors.access."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr

from schemas import topics
from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.examples import against_a_worker
from tests.support.http import request
from tests.support.workers import WorkerProcess, cli, event, read_topic, scalar, wait_until

pytestmark = pytest.mark.integration

ADMIN = "admin-secret-token"
PROJECTS = ("p1", "p2", "p3")
# Each project's subject holds a value only that project's readers may ever see.
SECRET_VALUE = {p: f"value-only-in-{p}" for p in PROJECTS}


def create(s: Settings, *args: str) -> dict[str, Any]:
    done = cli(s, "tokens", "create", "--json", *args)
    assert done.returncode == 0, done.stderr
    made: dict[str, Any] = json.loads(done.stdout)
    return made


@pytest.fixture
def stack(settings: Settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    s = settings.model_copy(update={"api_token": SecretStr(ADMIN)})
    tokens = {
        "p1-rw": create(s, "--project", "p1"),
        "p1-ro": create(s, "--project", "p1", "--read-only"),
        "p12-rw": create(s, "--project", "p1", "--project", "p2"),
        "p2-rw": create(s, "--project", "p2", "--label", "team two"),
        "revoked": create(s, "--project", "p1", "--project", "p2", "--project", "p3"),
    }
    assert cli(s, "tokens", "revoke", tokens["revoked"]["id"]).returncode == 0
    with WorkerProcess(s, tmp_path / "w.log") as w:
        sdk.publish_events(
            s,
            [
                event(
                    f"seed-{p}",
                    project=p,
                    content=f"I like {SECRET_VALUE[p]}",
                    cands=[{"predicate": "likes", "value": {"v": SECRET_VALUE[p]}}],
                )
                for p in PROJECTS
            ],
        )
        wait_until(lambda: w.check() and scalar(s, "SELECT count(*) FROM facts") == 3, 60)
        yield s, w, tokens


GHOST = {"project": "{p}", "subject": "ghost"}
# (name, method, path, query, body, projects named, writes); {p} is the project under test.
ROUTES: list[tuple[str, str, str, dict[str, str], Any, tuple[str, ...] | None, bool]] = [
    ("facts", "GET", "/v1/facts", {"project": "{p}", "subject": "alice"}, None, (), False),
    ("conflicts", "GET", "/v1/conflicts", {"project": "{p}"}, None, (), False),
    ("context", "GET", "/v1/context", {"project": "{p}", "subject": "alice"}, None, (), False),
    ("sources", "GET", "/v1/sources", {"project": "{p}", "fact": "nofact"}, None, (), False),
    ("aliases", "GET", "/v1/aliases", {"project": "{p}"}, None, (), False),
    ("events", "POST", "/v1/events", {}, "event", (), True),
    ("events-mixed", "POST", "/v1/events", {}, "mixed", ("p1",), True),
    ("erase", "DELETE", "/v1/subjects/{p}/ghost", {}, None, (), True),
    (
        "erase-fact",
        "DELETE",
        "/v1/facts/f1",
        {"project": "{p}", "subject": "ghost"},
        None,
        (),
        True,
    ),
    ("resolve", "POST", "/v1/conflicts/cs1/resolve", {}, "resolve", (), True),
    ("consolidate", "POST", "/v1/consolidate", {}, "bank", (), True),
    # Routes that name no project: the admin's alone.
    ("metrics", "GET", "/metrics", {}, None, None, False),
    ("status", "GET", "/v1/status", {}, None, None, False),
    ("faust", "GET", "/router/", {}, None, None, False),
    ("all-banks", "POST", "/v1/consolidate", {}, {"dry_run": True}, None, True),
]


COMMAND_ROUTES = ("erase", "erase-fact", "pin", "unpin", "resolve")


def body_for(kind: Any, project: str, n: int) -> Any:
    one = event(f"h-{n}", project=project, subject="ghost", content="hello")
    if kind == "event":
        return one
    if kind == "mixed":
        return [one, event(f"h-{n}-b", project="p1", subject="ghost", content="hi")]
    if kind == "resolve":
        return {"project_id": project, "subject_id": "ghost", "resolution": "keep_existing"}
    if kind == "bank":
        return {"bank": project, "dry_run": True}
    return kind


def expected(token: str, named: set[str] | None, write: bool) -> int:
    """The contract: admin everything; a live token its projects (reads, and writes unless
    read-only); project-less routes the admin's; revoked or unknown: 401."""
    rights = {
        "admin": (None, False),
        "p1-rw": ({"p1"}, False),
        "p1-ro": ({"p1"}, True),
        "p12-rw": ({"p1", "p2"}, False),
        "p2-rw": ({"p2"}, False),
    }
    if token not in rights:
        return 401
    projects, read_only = rights[token]
    if projects is None:
        return 200
    if named is None or not named <= projects or (write and read_only):
        return 403
    return 200


def test_never_a_cross_project_read_or_write(stack: tuple[Settings, WorkerProcess, Any]) -> None:
    s, w, tokens = stack
    secrets = {name: t["secret"] for name, t in tokens.items()} | {"admin": ADMIN}
    secrets["unknown"] = "mc_" + "A" * 43  # our shape, never issued
    secrets["garbage"] = "not a token"
    accepted_writes: list[tuple[str, str]] = []  # (route, project) of every 2xx write
    counter = iter(range(10**6))

    @against_a_worker(150)
    @given(
        token=st.sampled_from(sorted(secrets)),
        project=st.sampled_from(PROJECTS),
        route=st.sampled_from(ROUTES),
    )
    def one(token: str, project: str, route: Any) -> None:
        name, method, path, query, body, extra, write = route
        n = next(counter)
        q = {k: v.format(p=project) for k, v in query.items()}
        payload = body_for(body, project, n) if body is not None else None
        status, raw, ctype = request(
            w.url, path.format(p=project), secrets[token], method, q or None, payload
        )
        named = None if extra is None else {project, *extra}
        want = expected(token, named, write)
        assert ctype.startswith("application/json") or name in ("metrics", "faust"), ctype
        if want != 200:
            assert status == want, (token, project, name, status, raw[:200])
            assert set(orjson.loads(raw)) == {"error", "status"}, raw[:200]
        else:
            # 409: a pass already running; both are answers within scope.
            assert 200 <= status < 300 or (name == "consolidate" and status == 409), (
                token,
                project,
                name,
                status,
                raw[:200],
            )
            if write and status < 300:
                accepted_writes.append((name, project))
        for other in PROJECTS:
            # Only the admin may see what a project-less route shows (status reports).
            if token != "admin" and (named is None or other not in named or want != 200):
                assert SECRET_VALUE[other].encode() not in raw, (token, project, name)
        if want == 200 and name in ("facts", "context"):
            answer = orjson.loads(raw)
            assert answer["project_id"] == project
            facts = [f.get("fact", f) for f in answer["facts"]]
            assert facts and all(f["project_id"] == project for f in facts)

    one()
    # Nothing a refused request sent reached the broker: every event and command on the
    # topics is a seed or one an accepted request named, in a project that request was
    # allowed to write.
    sent_events = [orjson.loads(v) for _k, v, _h in read_topic(s, topics.EVENTS)]
    sent_commands = [orjson.loads(v) for _k, v, _h in read_topic(s, topics.COMMANDS)]
    assert accepted_writes
    allowed = {p for _n, p in accepted_writes} | {"p1"}  # "mixed" also writes p1
    events_accepted = sum(1 if n == "events" else 2 for n, _p in accepted_writes if "events" in n)
    assert len([e for e in sent_events if not e["event_id"].startswith("seed-")]) == (
        events_accepted
    )
    assert {e["project_id"] for e in sent_events} <= set(PROJECTS)
    assert all(e["project_id"] in allowed for e in sent_events if e["subject_id"] == "ghost")
    commands_accepted = sum(
        1 for n, _p in accepted_writes if n in ("erase", "erase-fact", "resolve")
    )
    assert len(sent_commands) == commands_accepted
    by_project = {(n, p) for n, p in accepted_writes}
    for c in sent_commands:
        assert any(p == c["project_id"] for _n, p in by_project)
    # The next good request still works.
    assert request(w.url, "/v1/facts", ADMIN, query={"project": "p1", "subject": "alice"})[0] == 200


def test_cli_lists_without_secrets_and_revocation_is_immediate(
    stack: tuple[Settings, WorkerProcess, Any],
) -> None:
    s, w, tokens = stack
    listed = cli(s, "tokens", "list", "--all", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert {r["id"] for r in rows} == {t["id"] for t in tokens.values()}
    assert {r["id"] for r in rows if r["revoked_at"]} == {tokens["revoked"]["id"]}
    plain = cli(s, "tokens", "list").stdout
    digests = [r["token_sha256"] for r in _token_rows(s)]
    for t in tokens.values():
        assert t["secret"] not in listed.stdout + plain
    for d in digests:
        assert d not in listed.stdout + plain
    assert all(len(d) == 64 for d in digests)  # stored as sha256 hex, not as the secret
    # Every principal may ask what it may do, and learns nothing else.
    me = orjson.loads(request(w.url, "/v1/whoami", tokens["p12-rw"]["secret"])[1])
    assert (me["admin"], me["projects"], me["read_only"]) == (False, ["p1", "p2"], False)
    assert me["token_id"] == tokens["p12-rw"]["id"]
    me = orjson.loads(request(w.url, "/v1/whoami", tokens["p1-ro"]["secret"])[1])
    assert (me["projects"], me["read_only"]) == (["p1"], True)
    assert orjson.loads(request(w.url, "/v1/whoami", ADMIN)[1])["admin"] is True
    assert request(w.url, "/v1/whoami", tokens["revoked"]["secret"])[0] == 401
    assert request(w.url, "/v1/whoami", ADMIN, query={"x": "1"})[0] == 400
    query = {"project": "p2", "subject": "alice"}
    secret = tokens["p2-rw"]["secret"]
    assert request(w.url, "/v1/facts", secret, query=query)[0] == 200
    assert cli(s, "tokens", "revoke", tokens["p2-rw"]["id"]).returncode == 0
    assert request(w.url, "/v1/facts", secret, query=query)[0] == 401
    missing = cli(s, "tokens", "revoke", "tok_000000000000")
    assert missing.returncode == 1 and "no token" in missing.stderr
    bad = cli(s, "tokens", "create", "--project", "bad project")
    assert bad.returncode == 1 and "--project" in bad.stderr


def _token_rows(s: Settings) -> list[dict[str, Any]]:
    from tests.support.workers import rows

    return rows(s, "SELECT token_sha256 FROM api_tokens")


def test_open_until_a_token_is_stored(settings: Settings, tmp_path: Path) -> None:
    """No admin token and no stored token: as before, every route answers without a bearer.
    Once a token exists (even revoked), a request without one is a 401."""
    with WorkerProcess(settings, tmp_path / "w.log") as w:
        query = {"project": "p1", "subject": "alice"}
        assert request(w.url, "/v1/facts", query=query)[0] == 200
        assert request(w.url, "/metrics")[0] == 200
        # As before tokens existed: a bearer, even a wrong one, changes nothing while open.
        assert request(w.url, "/v1/facts", "whatever", query=query)[0] == 200
        made = create(settings, "--project", "p1", "--read-only")
        assert request(w.url, "/v1/facts", query=query)[0] == 401
        assert request(w.url, "/v1/facts", "whatever", query=query)[0] == 401
        assert request(w.url, "/v1/facts", made["secret"], query=query)[0] == 200
        assert request(w.url, "/metrics", made["secret"])[0] == 403
        assert cli(settings, "tokens", "revoke", made["id"]).returncode == 0
        assert request(w.url, "/v1/facts", query=query)[0] == 401
        assert request(w.url, "/health")[0] == 200


# What urllib can put in a header value: latin-1 without line breaks.
HEADER_TEXT = st.text(
    alphabet=st.characters(max_codepoint=255, blacklist_characters="\r\n"), max_size=80
)


def test_any_authorization_header_is_a_401_never_a_500(
    stack: tuple[Settings, WorkerProcess, Any],
) -> None:
    _s, w, tokens = stack
    live = tokens["p1-rw"]["secret"]

    @against_a_worker(120)
    @given(
        value=HEADER_TEXT
        | st.sampled_from(["Bearer", "Bearer ", "bearer  x", "Basic abc", "Bearer mc_"])
        | st.builds(lambda t: "Bearer " + t, HEADER_TEXT)
        | st.builds(lambda i: "Bearer " + live[:i] + live[i + 1 :], st.integers(0, 45))
    )
    def one(value: str) -> None:
        status, raw, ctype = request_with_header(w.url, value)
        if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in value):
            # aiohttp's parser refuses a control character in a header with its own
            # plain-text 400 before any middleware runs: refused either way, never a 500.
            assert status in (400, 401), (value, status, raw[:200])
            return
        assert status == 401, (value, status, raw[:200])
        assert ctype.startswith("application/json") and set(orjson.loads(raw)) == {
            "error",
            "status",
        }

    one()
    # The real token still works afterwards.
    assert request_with_header(w.url, f"Bearer {live}")[0] == 200


def request_with_header(base: str, value: str) -> tuple[int, bytes, str]:
    query = {"project": "p1", "subject": "alice"}
    return request(base, "/v1/facts", query=query, headers={"Authorization": value})
