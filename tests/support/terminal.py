"""Run a CLI command on a pseudo-terminal with a real window size (progress bars draw there)."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

from schemas.settings import Settings
from tests.support.workers import REPO, settings_env


def on_terminal(settings: Settings, *args: str, timeout: float = 120) -> tuple[int, str]:
    leader, follower = pty.openpty()
    # A fresh pty is 0x0; a real terminal has a size (tqdm draws to its width).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "streams.cli.main", *args],
        env=settings_env(settings),
        cwd=REPO,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the pty
            break
        if not chunk:
            break
        out += chunk
    code = proc.wait(timeout)
    os.close(leader)
    return code, out.decode(errors="replace")
