"""Processes, PID files, ports and the state-dir lock of the local stack.

Invariants:
- A process is alive only if ``/proc/PID`` shows it and it is not a zombie; a PID file is
  only a hint, whose process is checked by its command line before it is trusted.
- ``terminate`` is only called on a PID the caller has proven ours: SIGTERM, a wait, then
  SIGKILL. Nothing else signals processes.
- Up and down of one state dir are serialised across processes by an ``flock`` on
  ``<state_dir>/.lock``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from streams.devstack.layout import StackPaths


def cmdline(pid: int) -> list[str] | None:
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


def read_pid(path: Path) -> int | None:
    """The PID a PID file holds, or None when it is missing or unreadable."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def reap(pid: int) -> None:
    """Collect ``pid`` if it is our exited child, so it does not linger as a zombie."""
    # When this very process started the server it is our child: reap it, or it stays a
    # zombie and looks alive forever.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def wait_gone(pid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``pid`` to exit; True when it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reap(pid)
        if cmdline(pid) is None:
            return True
        time.sleep(0.1)
    return False


def terminate(pid: int, timeout: float) -> None:
    """SIGTERM, wait, then SIGKILL: the caller has proven the PID is ours."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    if not wait_gone(pid, timeout):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        wait_gone(pid, 10)


@contextlib.contextmanager
def locked(p: StackPaths) -> Iterator[None]:
    """Serialise up/down of one state dir across processes (two pytest sessions, CLI)."""
    p.root.mkdir(parents=True, exist_ok=True)
    with (p.root / ".lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def port_open(host: str, port: int) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
_handed_out: set[int] = set()


def _listener_ports() -> range | None:
    """Ports below the kernel's ephemeral range, which outgoing connections never take."""
    try:
        low = int(_EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return range(10_000, low) if low - 10_000 >= 1_000 else None


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, for a listener bound later.

    Chosen below the ephemeral range: a port the OS picked from that range is soon reused as
    the local port of some outgoing connection (a Kafka client's), and the listener started
    later then fails with "address already in use". Never the same port twice per process.
    """
    ports = _listener_ports()
    if ports is not None:
        rng = random.Random()
        for _ in range(200):
            port = rng.choice(ports)
            if port not in _handed_out and _bindable(port):
                _handed_out.add(port)
                return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    _handed_out.add(port)
    return port


def log_tail(path: Path, lines: int = 15) -> str:
    """The last non-blank ``lines`` of a log on one line, for a ``StackError``."""
    try:
        tail = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return "(no log)"
    return " | ".join(line.strip() for line in tail if line.strip())
