"""Every ``CONSOLIDATOR_*`` variable, whatever its text: ``Settings`` either builds with all
its groups or refuses with a ``ValidationError`` naming the field; nothing else escapes."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic import ValidationError

from schemas.settings import Settings
from tests.support.examples import examples

GROUPS = ("kafka", "database", "llm", "embedding", "worker", "hygiene", "stack")
FIELDS = sorted(Settings.model_fields)

# What an environment can carry: any text without NUL or lone surrogates, plus the shapes
# that hurt numbers and enums.
env_text = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")),
    st.integers(-(10**30), 10**30).map(str),
    st.sampled_from(["nan", "inf", "-inf", "1e999", "", " ", "0", "-1", "true", "[]", "{}"]),
)


@hsettings(max_examples=examples(400), deadline=None)
@given(st.dictionaries(st.sampled_from(FIELDS), env_text, min_size=1, max_size=4))
def test_any_variable_text_builds_or_is_refused_by_field(values: dict[str, str]) -> None:
    names = {f"CONSOLIDATOR_{k.upper()}": v for k, v in values.items()}
    saved = {k: os.environ.get(k) for k in names}
    os.environ.update(names)
    try:
        try:
            s = Settings()
        except ValidationError as exc:
            assert {str(e["loc"][0]) for e in exc.errors()} <= set(values)
            return
        for group in GROUPS:
            getattr(s, group)
    finally:
        for k, old in saved.items():
            if old is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = old
