"""The command line under hostile arguments and configuration values: every command ends with
exit status 0, 1 (one ``error:`` line) or 2 (usage), never a traceback, and a refused
``config set`` publishes nothing."""

from __future__ import annotations

import asyncio
import contextlib
import io
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from schemas.settings import Settings
from streams.cli import main as cli
from streams.hygiene import run as hygiene
from tests.support.hostile import HOSTILE_TEXT
from tests.support.workers import settings_env

pytestmark = pytest.mark.integration

ARG = HOSTILE_TEXT.filter(lambda t: "\x00" not in t and "\ud800" not in t) | st.sampled_from(
    ["-1", "0", "100001", "1e3", "--json", "2026-01-01", "yesterday", "p1"]
)


EXPORT_FILE = str(Path(tempfile.gettempdir()) / "cli-boundary-export.jsonl")


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse: usage errors
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def _commands(draw: Any) -> list[str]:
    a, b, c = draw(ARG), draw(ARG), draw(ARG)
    return draw(
        st.sampled_from(
            [
                ["facts", "--project", a, "--subject", b, "--limit", c],
                ["facts", "--project", a, "--subject", b, "--as-of", c, "--json"],
                ["facts", "--project", "p1", "--subject", "s1", "--cursor", a],
                ["conflicts", "--project", a, "--cursor", b],
                ["sources", "--project", a, b, "--limit", c],
                ["pin", "--project", a, "--subject", b, c, "--no-wait"],
                ["resolve", "--project", a, "--subject", b, c, "--keep-new", "--no-wait"],
                ["resolve", "--project", "p1", "--subject", "s1", a, "--choose", b, "--no-wait"],
                ["context", "--project", a, "--subject", b, "--query", c, "--json"],
                ["config", "set", f"{a}={b}"],
                ["config", "set", f"interval_hours={a}", f"banks={b}"],
                ["config", "set", f"max_supersedes_per_run={a}"],
                ["export", "--project", a, "--output", EXPORT_FILE],
                ["import", a, "--dry-run", "--json"],
            ]
        )
    )


async def _migrate(settings: Settings) -> None:
    from streams.store.core import Store

    store = await Store.connect(settings)
    try:
        await store.migrate()
    finally:
        await store.close()


def test_hostile_arguments_end_cleanly(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in settings_env(settings).items():
        if key.startswith("CONSOLIDATOR_"):
            monkeypatch.setenv(key, value)
    from streams.kafka.client import ensure_topics

    ensure_topics(settings.kafka)
    # The test's own schema, migrated (the CLI's reads never migrate; without this the reads
    # found tables only when an earlier test had left some in ``public``).
    asyncio.run(_migrate(settings))
    assert _run(["facts", "--project", "p1", "--subject", "s1"])[0] == 0  # the schema exists
    before = hygiene.load_config(settings)

    @hsettings(
        max_examples=120,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def one(data: st.DataObject) -> None:
        argv = _commands(data.draw)
        code, _out, err = _run(argv)
        assert code in (0, 1, 2), (argv, code, err)
        assert "Traceback" not in err, (argv, err)
        if code == 1:
            assert err.startswith("error:") and err.count("\n") <= 3, (argv, err)

    one()
    # A config set that was refused published nothing: what is stored still validates.
    after = hygiene.load_config(settings)
    assert type(after) is type(before)
