"""streams.devstack.localstack: idempotent up, PID files of live processes, one-line failures.

The shared stack under <repo>/.stack is never brought down here: failure cases run against
a separate state dir on free ports.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.settings import Settings
from streams.devstack import localstack
from tests.support.net import free_port

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
STATE_DIR = REPO / ".stack"


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def test_up_twice_starts_nothing_the_second_time(request: pytest.FixtureRequest) -> None:
    # The local stack of this checkout, on the port the session uses; an external database
    # URL must not redirect the PostgreSQL half of this test.
    bootstrap = os.environ.get("CONSOLIDATOR_KAFKA_BOOTSTRAP", "127.0.0.1:9092")
    settings = Settings(state_dir=STATE_DIR, kafka_bootstrap=bootstrap, database_url=None)
    first = localstack.up(settings)
    if first.started:  # started by this test, not by a developer: stop what we started
        request.addfinalizer(lambda: localstack.down(settings, services=first.started))
    second = localstack.up(settings)
    assert second.started == []
    assert second.bootstrap == first.bootstrap == bootstrap
    assert second.database_url == first.database_url
    assert second.database_url.startswith("postgresql://")

    kafka_pid = int((STATE_DIR / "kafka.pid").read_text())
    pg_pid = int((STATE_DIR / "postgres.pid").read_text())
    assert "kafka.Kafka" in _cmdline(kafka_pid)
    assert str(STATE_DIR / "kafka" / "server.properties") in _cmdline(kafka_pid)
    assert "postgres" in _cmdline(pg_pid) and str(STATE_DIR / "pg") in _cmdline(pg_pid)
    # Detached: neither server belongs to this process's session.
    assert os.getsid(kafka_pid) != os.getsid(0) and os.getsid(pg_pid) != os.getsid(0)


def test_missing_java_is_one_line_error(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from schemas.settings import Settings;"
        "from streams.devstack.localstack import main_up;"
        f"sys.exit(main_up(Settings(state_dir=Path({str(tmp_path)!r}),"
        f" kafka_bootstrap='127.0.0.1:{free_port()}', kafka_controller_port={free_port()},"
        " kafka_home=None, database_url=None)))"
    )
    # A PATH without java (nor mvn): only the interpreter is called by absolute path.
    env = {**os.environ, "PATH": str(tmp_path / "empty-bin")}
    env.pop("KAFKA_HOME", None)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: no `java` on PATH"), lines[0]
    assert not (tmp_path / "kafka.pid").exists()


def test_port_taken_by_another_process(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        settings = Settings(
            state_dir=tmp_path,
            kafka_bootstrap=f"127.0.0.1:{port}",
            kafka_controller_port=free_port(),
            database_url=None,
        )
        with pytest.raises(localstack.StackError, match=f"port 127.0.0.1:{port} is taken"):
            localstack.up(settings, services=("kafka",))


def test_down_ignores_pid_files_of_foreign_processes(tmp_path: Path) -> None:
    # A PID file pointing at a live process that is not ours (here: this pytest process,
    # as after PID reuse) must be discarded, never signalled.
    (tmp_path / "kafka.pid").write_text(f"{os.getpid()}\n")
    (tmp_path / "postgres.pid").write_text(f"{os.getpid()}\n")
    assert localstack.down(Settings(state_dir=tmp_path, database_url=None)) == []
    assert not (tmp_path / "kafka.pid").exists()
    assert not (tmp_path / "postgres.pid").exists()
