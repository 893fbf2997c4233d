"""``consolidator publish`` against a real broker: a progress bar only on a terminal."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from schemas.settings import Settings
from tests.support.workers import cli, event

pytestmark = pytest.mark.integration


def test_publish_progress_bar_only_on_a_terminal(settings: Settings, tmp_path: Path) -> None:

    from streams.kafka.client import ensure_topics

    ensure_topics(settings.kafka)
    data = tmp_path / "events.jsonl"
    data.write_text(
        "\n".join(orjson.dumps(event(f"p{i}", content="hi")).decode() for i in range(1200)) + "\n"
    )
    piped = cli(settings, "publish", str(data))
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == ""
    assert piped.stderr == f"published 1200 events to {settings.topic_prefix}memory.events\n"

    # On a terminal (stdout and stderr a pty) the bar draws on stderr.
    from tests.support.terminal import on_terminal

    code, text = on_terminal(settings, "publish", str(data))
    assert code == 0
    assert "publish:" in text and "/1200" in text, text  # fast: maybe only the first frame
    assert "published 1200 events" in text
