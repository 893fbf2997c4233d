"""The settings each adapter receives: one frozen group per concern, read from ``Settings``.

``Settings`` keeps its flat fields as the parsing surface (every ``CONSOLIDATOR_*`` variable,
constructor keyword and ``model_copy(update=...)`` works as before); ``settings.kafka``,
``settings.database`` ... build these groups from them, and an adapter takes only its group.

Invariants: a group holds copies of validated values (nothing is re-parsed); derived values
(the embedded database's URL, the model directory) are resolved once, here; groups are
frozen, so an adapter cannot change what another sees.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, SecretStr


class _Group(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KafkaSettings(_Group):
    """Broker connection, security, topics and the consumer group."""

    bootstrap: str
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None
    sasl_username: str | None
    sasl_password: SecretStr | None
    ssl_cafile: Path | None
    ssl_certfile: Path | None
    ssl_keyfile: Path | None
    topic_prefix: str
    partitions: int
    replication_factor: int
    group_id: str
    session_timeout_s: float
    heartbeat_interval_s: float
    max_message_bytes: int
    retention_hours: float

    @property
    def host_port(self) -> tuple[str, int]:
        """The first bootstrap server as (host, port)."""
        first = self.bootstrap.split(",")[0]
        host, _, port = first.rpartition(":")
        return host or "127.0.0.1", int(port)


class DatabaseSettings(_Group):
    """Where PostgreSQL is and which schema the service owns."""

    url: str
    schema_name: str
    http_statement_timeout_ms: int


class LLMSettings(_Group):
    """The LLM provider, its budgets and how answers are asked for."""

    provider: Literal["fake", "openai"]
    base_url: str | None
    api_key: SecretStr
    model: str
    timeout_s: float
    max_retries: int
    concurrency: int
    backoff_s: float
    extraction_batching: bool
    extraction_batch_max_events: int
    extraction_coalescing: bool
    extraction_context_max_facts: int
    output_mode: Literal["auto", "json_schema", "json_object", "prompt"]
    max_tokens: int | None
    min_confidence: float
    attribute_judge_enabled: bool
    attribute_judge_acts_on: Literal["different", "both"] = "both"


class EmbedderSettings(_Group):
    """The embedding model, its runtime and the cache in front of it."""

    kind: Literal["fastembed", "hash"]
    model: str
    dim: int
    model_dir: Path
    threads: int | None
    parallel: int
    batch_size: int
    allow_spinning: bool
    token_budget: int
    cache_size: int
    episodic: Literal["deferred", "inline"]
    fill_batch: int
    max_backlog: int
    episodic_nice: int


class WorkerSettings(_Group):
    """Batching, retries, quarantine, stop and health, resolution thresholds, the HTTP side."""

    batch_size: int
    batch_within_s: float
    max_attempts: int
    retry_delay_s: float
    retry_max_delay_s: float
    quarantine_after_deaths: int
    relay_max_attempts: int
    stop_timeout_s: float
    health_stall_s: float
    tracing_enabled: bool
    http_host: str
    http_port: int
    api_token: SecretStr | None
    semantic_threshold: float
    semantic_unsure_create: float
    semantic_unsure_supersede: float
    semantic_shape_penalty: float
    value_conflicts: Literal["hold", "newer_wins"] = "hold"
    ended_values: Literal["retire", "keep"] = "retire"


class HygieneSettings(_Group):
    """The hygiene pass's defaults (hot-reloaded overrides come from its config topic)."""

    enabled: bool
    interval_hours: float
    dry_run: bool
    max_supersedes_per_run: int
    llm_assist_enabled: bool
    promote_corroboration_threshold: int
    heartbeat_s: float
    boot_delay_s: float
    report_groups: int
    report_banks: int
    write_batch: int


class StackSettings(_Group):
    """The local development stack (``consolidator up``)."""

    state_dir: Path
    kafka_controller_port: int
    kafka_home: Path | None
    kafka_heap: str
    local_llm_model: str
    local_llm_port: int
    local_llm_ctx: int
    local_llm_threads: int
