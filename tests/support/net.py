"""Loopback helpers shared by tests and benches: the product's own, so there is one."""

from __future__ import annotations

from streams.devstack.procs import free_port

__all__ = ["free_port"]
