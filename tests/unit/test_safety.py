"""Start-up lines and warnings of the worker (streams.safety), hostile hosts included."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr

from schemas.settings import Settings
from streams.llm.extractors import FakeExtractor, OpenAIExtractor, make_extractor
from streams.safety import (
    is_loopback,
    log_startup,
    redact_url,
    startup_lines,
    startup_warnings,
)


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST.", " localhost ", "::1", "[::1]"],
)
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "", "10.0.0.5", "192.168.1.2", "example.com", "[::]", "fe80::1%eth0"]
)
def test_hosts_beyond_loopback(host: str) -> None:
    assert not is_loopback(host)


@given(st.text(max_size=60))
def test_any_host_string_is_judged_without_raising(host: str) -> None:
    assert isinstance(is_loopback(host), bool)
    s = Settings(http_host=host, llm_provider="openai")
    assert isinstance(startup_warnings(s), list)
    assert isinstance(startup_lines(s), list)


def test_open_bind_without_token_warns() -> None:
    (warning,) = startup_warnings(Settings(http_host="0.0.0.0", llm_provider="openai"))
    assert "'0.0.0.0'" in warning and "CONSOLIDATOR_API_TOKEN" in warning


def test_open_bind_with_token_or_loopback_is_quiet() -> None:
    token = SecretStr("s3cret")
    assert (
        startup_warnings(Settings(http_host="0.0.0.0", api_token=token, llm_provider="openai"))
        == []
    )
    assert startup_warnings(Settings(llm_provider="openai")) == []  # the default: loopback


def test_fake_provider_warns_and_names_fake_candidates() -> None:
    (warning,) = startup_warnings(Settings())
    assert "fake" in warning and "metadata.fake_candidates" in warning


def test_provider_line_names_the_provider_and_no_secret() -> None:
    s = Settings(
        llm_provider="openai",
        openai_base_url="http://user:hunter2@10.1.2.3:8080/v1",
        openai_api_key=SecretStr("sk-very-secret"),
        openai_model="smol",
        api_token=SecretStr("tok-secret"),
    )
    text = "\n".join(startup_lines(s) + startup_warnings(s))
    assert "llm provider openai" in text and "'smol'" in text and "output mode auto" in text
    assert "10.1.2.3:8080" in text
    for secret in ("hunter2", "sk-very-secret", "tok-secret", "user:"):
        assert secret not in text
    assert "llm provider fake" in startup_lines(Settings())[0]


def test_redact_url() -> None:
    assert redact_url("http://a:b@h:1/v1") == "http://h:1/v1"
    assert redact_url("http://h/v1") == "http://h/v1"
    assert redact_url("http://[::1") == "<unparseable url>"


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_log_startup_is_visible_at_the_default_warning_level() -> None:
    # As in worker.run: basicConfig puts the root logger at WARNING, its handler at NOTSET.
    root, handler = logging.getLogger(), _Collect()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    try:
        log_startup(Settings(http_host="0.0.0.0"))
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    mine = [(r.levelno, r.getMessage()) for r in handler.records if r.name == "streams.safety"]
    assert any(level == logging.INFO and "llm provider fake" in m for level, m in mine)
    assert sum(level == logging.WARNING for level, _m in mine) == 2


def test_only_the_fake_provider_honours_fake_candidates() -> None:
    assert isinstance(make_extractor(Settings().llm), FakeExtractor)
    assert isinstance(make_extractor(Settings(llm_provider="openai").llm), OpenAIExtractor)
