"""The pure access rules (processors.access) and the token shape: no principal reaches a
project outside its scope, a read-only one never writes, only the admin has project-less
routes; secrets are recognised by shape and stored only as their digest."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from processors.access import allows, digest, looks_like_secret, refusal
from schemas.tokens import ADMIN, Principal
from streams.cli.tokens import new_secret

PROJECTS = st.sampled_from(["p1", "p2", "p3", "a.b", "x:y", "P1"])
PRINCIPALS = st.builds(
    Principal,
    admin=st.just(False),
    token_id=st.just("tok_000000000000"),
    projects=st.lists(PROJECTS, max_size=3, unique=True).map(tuple),
    read_only=st.booleans(),
)


@given(principal=PRINCIPALS, project=st.none() | PROJECTS, write=st.booleans())
def test_a_token_reaches_exactly_its_projects_with_its_rights(
    principal: Principal, project: str | None, write: bool
) -> None:
    allowed = allows(principal, project, write)
    in_scope = project is not None and project in principal.projects
    expected = in_scope and not (write and principal.read_only)
    assert allowed == expected
    if not allowed:
        reason = refusal(principal, project, write)
        assert reason and (project is None or repr(project) in reason)
        # The reason never names the token's other projects.
        for other in principal.projects:
            assert other == project or repr(other) not in reason


@given(project=st.none() | PROJECTS, write=st.booleans())
def test_the_admin_may_do_anything(project: str | None, write: bool) -> None:
    assert allows(ADMIN, project, write)


def test_project_names_match_whole_and_case_sensitively() -> None:
    token = Principal(admin=False, projects=("p1",), read_only=False)
    assert allows(token, "p1", True)
    for near in ("P1", "p10", "p", "p1 ", "p1/x"):
        assert not allows(token, near, False), near


def test_new_secrets_have_our_shape_and_differ() -> None:
    made = [new_secret() for _ in range(50)]
    assert len({s for _i, s in made}) == 50 and len({i for i, _s in made}) == 50
    for token_id, secret in made:
        assert looks_like_secret(secret) and token_id.startswith("tok_")
        assert digest(secret) == hashlib.sha256(secret.encode()).hexdigest()
        assert secret not in digest(secret)


@given(st.text(max_size=80))
def test_any_text_is_a_secret_only_with_our_shape(value: str) -> None:
    if looks_like_secret(value):
        assert value.startswith("mc_") and len(value) == 46
    digest(value)  # lone surrogates too: never raises
