"""streams.client without a server: an invalid event fails before anything is sent, and no
answer at all (a closed port) is ``Unreachable``, an ``ApiError`` with status 0, never a
raw socket error."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from streams.client import ApiError, Client, Unreachable
from tests.support.net import free_port


def test_a_closed_port_is_unreachable() -> None:
    api = Client(f"http://127.0.0.1:{free_port()}", timeout=2)
    for call in (
        lambda: api.facts("p1", "alice"),
        lambda: api.remember("p1", "alice", "hello"),
        lambda: api.erase("p1", "alice"),
    ):
        with pytest.raises(Unreachable) as failed:
            call()
        assert isinstance(failed.value, ApiError) and failed.value.status == 0
        assert "no answer from" in failed.value.message


def test_an_invalid_event_is_refused_before_sending() -> None:
    api = Client(f"http://127.0.0.1:{free_port()}", timeout=2)
    with pytest.raises(ValidationError):  # not Unreachable: nothing was sent
        api.remember("p1", "alice", "")
    with pytest.raises(ValidationError):
        api.publish([{"event_id": "e1"}])
