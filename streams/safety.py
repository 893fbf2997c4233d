"""What the worker says about its configuration when it starts: which LLM provider it runs,
and the settings that would be unsafe in production.

Invariants:
- ``startup_lines`` and ``startup_warnings`` are pure functions of Settings that never
  raise, whatever the host string; ``log_startup`` only logs them.
- The provider line is always emitted (at INFO on a logger pinned to INFO, so the worker's
  default ``--loglevel warning`` still shows it); a secret (API key, token) is never printed.
- Warnings: the HTTP API bound beyond loopback without an API token (until a project token
  is stored, anyone who can reach the port reads facts and context, publishes events and
  can trigger a hygiene pass), and the ``fake``
  provider, whose ``metadata.fake_candidates`` lets any producer write candidates verbatim
  (only ``fake`` honours that field; it is meant for tests and demos).
"""

from __future__ import annotations

import ipaddress
import logging
from urllib.parse import urlsplit, urlunsplit

from schemas.settings import Settings

log = logging.getLogger(__name__)
log.setLevel(logging.INFO)

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the port on this machine. An empty host, a wildcard
    (0.0.0.0, ::) or any name other than localhost counts as beyond loopback."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def redact_url(url: str) -> str:
    """``url`` without user:password (a base URL may carry them)."""
    try:
        parts = urlsplit(url)
        if parts.username is None and parts.password is None:
            return url
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port is not None else host
        return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        return "<unparseable url>"


def startup_lines(settings: Settings) -> list[str]:
    """What the worker runs, one line each."""
    if settings.llm_provider == "openai":
        provider = (
            f"llm provider openai: model {settings.openai_model!r} at "
            f"{redact_url(settings.openai_base_url or 'the OpenAI API')}, output mode "
            f"{settings.llm_output_mode}, min_confidence {settings.min_confidence:g}"
        )
    else:
        provider = (
            f"llm provider {settings.llm_provider}: deterministic sentence patterns and "
            f"metadata.fake_candidates, min_confidence {settings.min_confidence:g}"
        )
    # Without the admin token the API is open only until a project token is stored
    # (streams.http.auth); which of the two holds is the database's to say, not the settings'.
    auth = (
        "bearer token required"
        if settings.api_token is not None
        else "no admin token: open until a project token is stored"
    )
    http = f"http api on {settings.http_host}:{settings.http_port} ({auth})"
    return [provider, http]


def startup_warnings(settings: Settings) -> list[str]:
    """Unsafe settings, one line each (empty when there are none)."""
    warnings: list[str] = []
    if settings.api_token is None and not is_loopback(settings.http_host):
        warnings.append(
            f"the HTTP API binds {settings.http_host!r} (beyond loopback) without an API "
            "token: while no project token is stored, anyone who can reach port "
            f"{settings.http_port} can read facts, conflicts and context and start a hygiene "
            "pass; set CONSOLIDATOR_API_TOKEN or bind CONSOLIDATOR_HTTP_HOST=127.0.0.1"
        )
    if settings.llm_provider == "fake":
        warnings.append(
            "llm provider is 'fake' (tests and demos): any producer's "
            "metadata.fake_candidates is written as extracted candidates; set "
            "CONSOLIDATOR_LLM_PROVIDER=openai in production"
        )
    return warnings


def log_startup(settings: Settings) -> None:
    """Log what the configuration exposes (plaintext, no token) once at start."""
    for line in startup_lines(settings):
        log.info("%s", line)
    for warning in startup_warnings(settings):
        log.warning("%s", warning)
