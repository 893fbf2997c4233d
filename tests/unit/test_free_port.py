"""free_port: listener ports outside the ephemeral range, never handed out twice."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from streams.devstack import procs


def test_ports_are_below_the_ephemeral_range_distinct_and_bindable() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [procs.free_port() for _ in range(50)]
    assert len(set(ports)) == len(ports)
    assert all(p < low for p in ports), ports
    for port in ports[:5]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_someone_listens_on_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        # The busy port is the only candidate: the OS's pick must come back instead.
        monkeypatch.setattr(procs, "_listener_ports", lambda: range(busy, busy + 1))
        monkeypatch.setattr(procs, "_handed_out", set())
        assert procs.free_port() != busy


def test_without_a_readable_range_the_os_picks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(procs, "_EPHEMERAL", tmp_path / "missing")
    port = procs.free_port()
    assert 0 < port < 65536
