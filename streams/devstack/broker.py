"""The local KRaft broker: start, adopt, wait until ready, stop.

Invariants:
- A broker is ours only if its ``/proc/PID/cmdline`` runs ``kafka.Kafka`` with *our*
  server.properties; only such a process is ever signalled.
- Start is idempotent: a running broker of ours is reused (its PID file rewritten when lost,
  e.g. after a crash), a stale PID file (process gone, or PID reused) is discarded.
- The broker is detached (own session), so it outlives the Python process that started it.
- Ready means: the start-up line of *this* start in the log, the port open, and the admin
  API answering (``streams.kafka.admin``; no Kafka client is imported here).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from pathlib import Path

from schemas.settings import Settings
from streams.devstack.broker_setup import (
    ensure_formatted,
    find_java,
    kafka_libs,
    write_config,
)
from streams.devstack.layout import StackError, StackPaths
from streams.devstack.procs import cmdline, log_tail, port_open, read_pid, reap, terminate

READY_LINE = "Kafka Server started"


def is_our_kafka(pid: int, p: StackPaths) -> bool:
    """True when ``pid`` is a live broker started with our server.properties."""
    argv = cmdline(pid)
    return argv is not None and "kafka.Kafka" in argv and str(p.server_properties) in argv


def find_our_kafka(p: StackPaths) -> int | None:
    """A broker of ours running without (or with a lost) PID file, e.g. after a crash."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and is_our_kafka(int(entry.name), p):
            return int(entry.name)
    return None


def admin_ok(bootstrap: str, timeout: float = 5.0) -> bool:
    """True when the broker at ``bootstrap`` answers an admin request."""
    from streams.kafka.admin import broker_answers

    return broker_answers(bootstrap, timeout)


def wait_kafka_ready(
    settings: Settings, p: StackPaths, pid: int, log_offset: int | None, timeout: float
) -> None:
    """Wait until the broker serves; ``StackError`` if it exits or ``timeout`` passes."""
    host, port = settings.kafka_host_port
    bootstrap = f"{host}:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cmdline(pid) is None:
            reap(pid)
            p.kafka_pid.unlink(missing_ok=True)
            raise StackError(f"Kafka exited during start-up; log: {log_tail(p.kafka_log)}")
        seen = True
        if log_offset is not None:  # only lines written by this start count
            with p.kafka_log.open("rb") as fh:
                fh.seek(log_offset)
                seen = READY_LINE.encode() in fh.read()
        if seen and port_open(host, port) and admin_ok(bootstrap):
            return
        time.sleep(0.25)
    raise StackError(
        f"Kafka not ready after {timeout:.0f}s (see {p.kafka_log}): {log_tail(p.kafka_log)}"
    )


def kafka_up(settings: Settings, p: StackPaths, timeout: float) -> bool:
    """Ensure our broker runs; True when this call started it."""
    pid = read_pid(p.kafka_pid)
    if pid is not None and not is_our_kafka(pid, p):
        p.kafka_pid.unlink(missing_ok=True)  # stale: process gone or PID reused
        pid = None
    if pid is None and (orphan := find_our_kafka(p)) is not None:
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
        wait_kafka_ready(settings, p, pid, None, timeout)
        return False

    # What is missing on this machine first (java, then the jars), then what is in the way.
    java = find_java()
    _, port = settings.kafka_host_port
    for taken in (port, settings.kafka_controller_port):
        if port_open("127.0.0.1", taken):
            raise StackError(
                f"port 127.0.0.1:{taken} is taken by another process (not the broker of {p.root})"
            )
    libs = kafka_libs(settings, p)
    write_config(settings, p)
    ensure_formatted(settings, p, java, libs)

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
    wait_kafka_ready(settings, p, proc.pid, offset, timeout)
    return True


def kafka_down(p: StackPaths, timeout: float = 30.0) -> bool:
    """Stop our broker (proven ours by its cmdline); True when one was stopped."""
    pid = read_pid(p.kafka_pid)
    p_ok = pid is not None and is_our_kafka(pid, p)
    if pid is not None and p_ok:
        terminate(pid, timeout)  # SIGTERM = controlled shutdown, clean log dir
    p.kafka_pid.unlink(missing_ok=True)
    return p_ok
