"""The one Settings object of the service.

Invariants: built once at an entry point (CLI, test session) and passed down; nothing reads
the environment at import time. Every field is overridable with ``CONSOLIDATOR_<FIELD>``.
The flat fields are the parsing surface; adapters receive their group (``settings.kafka``,
``.database``, ``.llm``, ``.embedding``, ``.worker``, ``.hygiene``, ``.stack``: see
``schemas/settings_groups.py``), never the whole object.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas import settings_groups as g


class Settings(BaseSettings):
    """Every setting of the service, from ``CONSOLIDATOR_*`` variables or keywords."""

    model_config = SettingsConfigDict(env_prefix="CONSOLIDATOR_", extra="ignore", frozen=True)

    # --- local state (Kafka jars + log dir, embedded PostgreSQL data, model dir) ---
    state_dir: Path = Path(".stack")

    # --- Kafka ---
    kafka_bootstrap: str = "127.0.0.1:9092"
    kafka_controller_port: int = 9093
    # An existing Kafka distribution to run instead of the Maven-resolved jars.
    kafka_home: Path | None = Field(
        default=None, validation_alias=AliasChoices("CONSOLIDATOR_KAFKA_HOME", "KAFKA_HOME")
    )
    kafka_heap: str = "768m"

    # --- the local model server (`make llm`, `consolidator up --llm`) ---
    # Which assembled GGUF it serves (streams.devstack.llm_weights: 1.5b or 0.5b), where, with
    # what context and how many threads (0 = the cores this process may use).
    local_llm_model: Literal["qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct"] = (
        "qwen2.5-coder-1.5b-instruct"
    )
    local_llm_port: int = Field(default=8088, ge=1, le=65535)
    local_llm_ctx: int = Field(default=4096, ge=512, le=131072)
    local_llm_threads: int = Field(default=0, ge=0, le=256)
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    kafka_sasl_username: str | None = None
    kafka_sasl_password: SecretStr | None = None
    kafka_ssl_cafile: Path | None = None
    kafka_ssl_certfile: Path | None = None
    kafka_ssl_keyfile: Path | None = None
    topic_prefix: str = ""
    partitions: int = Field(default=6, ge=1, le=1024)
    replication_factor: int = Field(default=1, ge=1)
    group_id: str = "memory-consolidator"
    # A worker that dies without leaving the group holds its partitions this long: keep it
    # short so a crash costs seconds, not faust's default minute.
    kafka_session_timeout_s: float = Field(default=10.0, ge=6.0)
    kafka_heartbeat_interval_s: float = Field(default=3.0, gt=0)
    # One limit for every message, everywhere: librdkafka (message.max.bytes), aiokafka
    # (max_request_size, max_partition_fetch_bytes) and max.message.bytes on created topics.
    kafka_max_message_bytes: int = Field(default=1_000_000, ge=64 * 1024, le=100_000_000)
    # retention.ms of the delete-policy topics the worker creates (raw events, retries,
    # dead letters, change events): how long an erased subject's raw messages can outlive
    # the erasure in the log. Compacted topics keep their latest record.
    kafka_retention_hours: float = Field(default=168.0, gt=0)

    # --- PostgreSQL (None = the embedded server under state_dir/pg) ---
    database_url: str | None = None
    database_schema: str = "public"

    # --- LLM provider ---
    llm_provider: Literal["fake", "openai"] = "fake"
    openai_base_url: str | None = None
    openai_api_key: SecretStr = SecretStr("not-needed")
    openai_model: str = "gpt-4o-mini"
    openai_timeout_s: float = Field(default=30.0, gt=0)
    llm_max_retries: int = Field(default=3, ge=0)
    llm_concurrency: int = Field(default=16, ge=1)
    llm_backoff_s: float = Field(default=1.0, ge=0)
    # Several events of one subject in a batch share one extraction call (in order), at most
    # this many per call; off means one call per event.
    extraction_batching: bool = True
    extraction_batch_max_events: int = Field(default=16, ge=1)
    # With batching, subjects of one project with few events in a batch also share one call
    # (one section per subject, still at most extraction_batch_max_events events); off keeps
    # every call to one subject's data, for a model that mixes subjects up.
    extraction_coalescing: bool = True
    # Active facts of a subject shown to the extractor (named attributes first, then the
    # newest notes): a subject's history never sets the size of a prompt.
    extraction_context_max_facts: int = Field(default=200, ge=0)
    # Of those, a prompt lists only what fits this many (estimated) tokens: all of them when
    # they fit, else the extraction_context_recent most recently updated, then the ones most
    # similar to the events' text (processors.extraction_context). 0: list none.
    extraction_context_tokens: int = Field(default=400, ge=0, le=1_000_000)
    extraction_context_recent: int = Field(default=3, ge=0, le=1000)
    # /v1/context: an event a later event of the same context restates within this cosine
    # distance (MiniLM) is read as restated by it: marked in the JSON, counted in the text.
    # Chosen by `python -m bench.memory.restated` (tune pairs: at most 0.1 % of statements
    # that both stay true read as restated); 0 turns it off.
    context_restated_distance: float = Field(default=0.12, ge=0, le=2)
    # After extraction, one more call per event asks which known attribute a candidate under a
    # new name changes (processors.attribute_link), among the subject's facts that fit
    # extraction_link_tokens (chosen as for the prompt). Unset: on with a real provider.
    extraction_linking: bool | None = None
    # A message about someone else that the extraction prompt answered with nothing is asked
    # once more with a short prompt (streams.consolidation.extraction, bench/README.md).
    extraction_second_look: bool = True
    extraction_link_tokens: int = Field(default=400, ge=0, le=1_000_000)
    # How a structured answer is asked for (extractor and judges; processors.jsontext):
    # "json_schema", "json_object" (the schema sent alongside, as llama.cpp servers read it),
    # "prompt" (the schema in the prompt, the answer read leniently) or "auto" (json_schema
    # first, then the next mode on a refusal naming response_format; kept for the process).
    llm_output_mode: Literal["auto", "json_schema", "json_object", "prompt"] = "auto"
    # Cap on the tokens of one answer (sent as max_tokens; unset: not sent). Set it for local
    # servers, where a small model can generate until its context is full.
    llm_max_tokens: int | None = Field(default=None, ge=1)
    # Candidates with a confidence below this are rejected and counted (low_confidence).
    min_confidence: float = Field(default=0.5, ge=0, le=1)

    # --- embedder ---
    embedder: Literal["fastembed", "hash"] = "fastembed"
    embedding_model: str = "sentence-transformers/all-MiniLM-L6-v2"
    embedding_dim: int = 384
    model_dir: Path | None = None  # default: state_dir/model
    # onnxruntime threads per model run (unset: 1 while runs go side by side, else
    # onnxruntime's own choice, the machine's cores).
    embed_threads: int | None = None
    # Model runs side by side (0 = one per core this process may use), each on one core
    # unless embed_threads says otherwise. Against one run at a time over two cores: 1.06-1.13x
    # the texts per second on contents, 1.3x on the write path's small calls, and the peak of
    # two runs' memory at once (bench/README.md, issue 15 sixth part). 1 = one at a time.
    embed_parallel: int = Field(default=0, ge=0, le=64)
    embed_batch_size: int = Field(default=64, ge=1)
    # onnxruntime's pool threads busy-wait between runs unless this is off
    # (streams.embedding.embedder).
    embed_allow_spinning: bool = False
    # Padded tokens per model run (texts x the longest one's tokens): bounds one inference's
    # memory whatever the texts' lengths; a longer text runs alone (streams.embedding).
    embed_token_budget: int = Field(default=512, ge=1, le=1_000_000)
    # Candidate texts ("predicate json(value)", statements) recently embedded are reused
    # (LRU entries, ~1.7 KB each at 384 dimensions: 10,000 = 17 MiB); 0 turns the cache off.
    embed_cache_size: int = Field(default=10_000, ge=0)
    # "deferred": an event is stored without the embedding of its content, which a separate
    # task fills in later (streams.consolidation.episodic), so facts never wait for it;
    # "inline": embedded in the write path's own call, before the event is stored.
    episodic_embedding: Literal["deferred", "inline"] = "deferred"
    # Events the filler embeds per round (one embed call, one transaction; the model runs
    # them in short runs within embed_token_budget). 256 embedded the bench's contents 1.2x
    # faster than 64, with the same paced p99.
    episodic_fill_batch: int = Field(default=256, ge=1, le=4096)
    # While fewer events than this wait for their embedding, the filler lets a batch in flight
    # go first (facts before episodic embeddings); at or above it, it fills alongside, so the
    # backlog stays bounded under sustained load. 0: never wait.
    episodic_max_backlog: int = Field(default=10_000, ge=0)
    # Niceness of the filler's thread (Linux, 0-19; 0 = as the write path): the write path
    # and the event loop get the CPU first, so deferred contents do not add to fact latency.
    episodic_nice: int = Field(default=10, ge=0, le=19)
    # Attribute resolution (processors.attributes): the cosine distance between two
    # predicates' humanised embeddings at or below which they are the same attribute, unless
    # a number or qualifier tells them apart. Calibrated per model by `consolidator calibrate`.
    semantic_threshold: float = Field(default=0.17, ge=0, le=2)
    # Above it and up to these, the pair is unsure: the candidate waits in a
    # possible_same_attribute conflict set. A supersede says a target exists: a wider band.
    semantic_unsure_create: float = Field(default=0.4, ge=0, le=2)
    semantic_unsure_supersede: float = Field(default=0.57, ge=0, le=2)
    # Added to the distance when the two values share no key (shape is evidence, not proof).
    semantic_shape_penalty: float = Field(default=0.05, ge=0, le=2)
    # Ask the LLM (openai provider) about the unsure pairs of each batch, in one call; its
    # decisions become resolve commands on memory.commands (fail-soft). Unset: on with a real
    # provider (openai), so a new attribute is not held back waiting for a person; the fake
    # extractor has no model to ask.
    attribute_judge_enabled: bool | None = None
    # A different value for a known attribute from a newer event, stated without "supersede"
    # (a small model's usual "I drive a Tesla now"): "hold" opens a value conflict (the old
    # fact stays, the judge or a person decides); "newer_wins" supersedes, unless the message
    # adds a value or the facts are about different things (processors.newer_value).
    value_conflicts: Literal["hold", "newer_wins"] = "hold"
    # A known value the user's message ends or denies without a new one ("Sold the Golf",
    # "I'm not vegetarian anymore"; processors.retirement, read strictly): "retire" supersedes
    # it with no successor, so it is no longer served as current; "keep" leaves it active.
    ended_values: Literal["retire", "keep"] = "retire"
    # Which of the judge's verdicts on an unsure attribute pair become commands. Measured with
    # the local 1.5B on the tune pairs (bench/results/attribute_judge): its "different" was
    # right 79 times in 101, its "same" 23 times in 60, worse than the pairs' own base rate;
    # a wrong "same" retires a true fact, so by default only "different" acts. A stronger
    # model: "both".
    attribute_judge_acts_on: Literal["different", "both"] = "different"

    # --- worker ---
    batch_size: int = Field(default=256, ge=1)
    batch_within_s: float = Field(default=0.05, gt=0)
    # Batches of the events agent held at once: the newer ones are extracted (on a second
    # connection) while the oldest writes, so an extractor's latency hides behind the writes;
    # a batch's extraction context is then the state before the older ones committed.
    # 1: one batch at a time, context always current (streams.consolidation.overlap).
    batches_in_flight: int = Field(default=4, ge=1, le=16)
    max_attempts: int = Field(default=3, ge=1)
    retry_delay_s: float = Field(default=2.0, ge=0)
    # A retry header asking to wait longer than this is treated as due at once (kept below
    # health_stall_s, so a deliberate wait never reads as a stalled consumer).
    retry_max_delay_s: float = Field(default=60.0, gt=0)
    # A message held while its worker died this many times is dead-lettered ("quarantined")
    # by the next worker that reads it, instead of being replayed forever.
    quarantine_after_deaths: int = Field(default=3, ge=1)
    # A change event the broker refuses this many times is dead-lettered (memory.changes.dlq).
    relay_max_attempts: int = Field(default=3, ge=1)
    # After SIGTERM the worker exits within this time, non-zero if it had to force it.
    stop_timeout_s: float = Field(default=30.0, gt=0)
    # /health says not ready when the consumer made no progress this long while lag > 0.
    health_stall_s: float = Field(default=120.0, gt=0)
    # Every HTTP read runs under this PostgreSQL statement timeout.
    http_statement_timeout_ms: int = Field(default=5000, ge=1)
    # OpenTelemetry spans per batch and per event, continued from a raw event's traceparent
    # header into its change events' headers; exported over OTLP/HTTP as the standard
    # OTEL_* variables say (streams.consolidation.tracing).
    tracing_enabled: bool = False
    http_host: str = "127.0.0.1"
    http_port: int = 6066
    # The admin token: every right on every route. Project-scoped tokens live hashed in
    # PostgreSQL (`consolidator tokens create`); with neither, the API is open (loopback).
    api_token: SecretStr | None = None
    # POST /v1/events: the largest body read (a bigger one is a 413 before it is parsed).
    http_events_max_bytes: int = Field(default=1_048_576, ge=1024, le=64 * 1_048_576)
    # POST /v1/events: the most events in one request (each one Kafka message, all acked
    # before the 202); more is a 400.
    http_events_max_batch: int = Field(default=500, ge=1, le=10_000)
    # POST /v1/events: events a second per token (the admin counts as one caller), refilled
    # continuously up to http_events_burst; over it a request is a 429 with Retry-After.
    # 0: no rate bound.
    http_events_per_s: float = Field(default=0.0, ge=0)
    # POST /v1/events: the most events a caller may send at once after a pause (a request
    # larger than this is a 400: it could never be admitted).
    http_events_burst: int = Field(default=1000, ge=1, le=1_000_000)

    # --- the MCP server (`consolidator mcp`) ---
    # The worker API it calls (unset: http://{http_host}:{http_port}) and the bearer token it
    # sends (unset: api_token); give it a project-scoped token in production.
    mcp_api_url: str | None = None
    mcp_token: SecretStr | None = None
    # Where `consolidator mcp --transport http` listens (streamable HTTP at /mcp).
    mcp_http_host: str = "127.0.0.1"
    mcp_http_port: int = Field(default=6067, ge=1, le=65535)

    # --- hygiene defaults (hot-reloaded overrides come from memory-consolidate.config) ---
    hygiene_enabled: bool = True
    hygiene_interval_hours: float = Field(default=24, gt=0)
    hygiene_dry_run: bool = False
    hygiene_max_supersedes_per_run: int = Field(default=10_000, ge=0)
    hygiene_llm_assist_enabled: bool = False
    hygiene_promote_corroboration_threshold: int = Field(default=3, ge=1)
    # How often the worker checks whether a pass is due, and how long after boot the first
    # check runs (a pass missed while no worker ran starts then).
    hygiene_heartbeat_s: float = Field(default=3600.0, gt=0)
    hygiene_boot_delay_s: float = Field(default=15.0, ge=0)
    # Groups listed per bank in a report (all are counted): a report fits one Kafka message.
    hygiene_report_groups: int = Field(default=100, ge=0)
    # Banks listed in a run's report (those with something to say first); all are counted.
    hygiene_report_banks: int = Field(default=200, ge=0)
    # Subjects written per transaction by the pass (each holds its advisory lock meanwhile).
    hygiene_write_batch: int = Field(default=64, ge=1)

    @property
    def judge_enabled(self) -> bool:
        """Whether the attribute judge runs: as set, else whenever the provider is real."""
        if self.attribute_judge_enabled is not None:
            return self.attribute_judge_enabled
        return self.llm_provider == "openai"

    @property
    def linking_enabled(self) -> bool:
        """Whether extraction asks the link step: as set, else whenever the provider is real."""
        if self.extraction_linking is not None:
            return self.extraction_linking
        return self.llm_provider == "openai"

    @property
    def resolved_model_dir(self) -> Path:
        """``model_dir``, or ``state_dir/model`` when unset."""
        return self.model_dir if self.model_dir is not None else self.state_dir / "model"

    @property
    def kafka_host_port(self) -> tuple[str, int]:
        """The first bootstrap server as (host, port)."""
        return self.kafka.host_port

    @property
    def resolved_database_url(self) -> str:
        """``database_url``, or the embedded server's socket under ``state_dir/pg``."""
        if self.database_url:
            return self.database_url
        return f"postgresql://postgres:@/postgres?host={(self.state_dir / 'pg').resolve()}"

    # --- the groups each adapter receives (schemas/settings_groups.py) ---

    @property
    def kafka(self) -> g.KafkaSettings:
        """Broker connection, security, topics and the consumer group."""
        return g.KafkaSettings(
            bootstrap=self.kafka_bootstrap,
            security_protocol=self.kafka_security_protocol,
            sasl_mechanism=self.kafka_sasl_mechanism,
            sasl_username=self.kafka_sasl_username,
            sasl_password=self.kafka_sasl_password,
            ssl_cafile=self.kafka_ssl_cafile,
            ssl_certfile=self.kafka_ssl_certfile,
            ssl_keyfile=self.kafka_ssl_keyfile,
            topic_prefix=self.topic_prefix,
            partitions=self.partitions,
            replication_factor=self.replication_factor,
            group_id=self.group_id,
            session_timeout_s=self.kafka_session_timeout_s,
            heartbeat_interval_s=self.kafka_heartbeat_interval_s,
            max_message_bytes=self.kafka_max_message_bytes,
            retention_hours=self.kafka_retention_hours,
        )

    @property
    def database(self) -> g.DatabaseSettings:
        """Where PostgreSQL is and which schema the service owns."""
        return g.DatabaseSettings(
            url=self.resolved_database_url,
            schema_name=self.database_schema,
            http_statement_timeout_ms=self.http_statement_timeout_ms,
        )

    @property
    def llm(self) -> g.LLMSettings:
        """The LLM provider, its budgets and how answers are asked for."""
        return g.LLMSettings(
            provider=self.llm_provider,
            base_url=self.openai_base_url,
            api_key=self.openai_api_key,
            model=self.openai_model,
            timeout_s=self.openai_timeout_s,
            max_retries=self.llm_max_retries,
            concurrency=self.llm_concurrency,
            backoff_s=self.llm_backoff_s,
            extraction_batching=self.extraction_batching,
            extraction_batch_max_events=self.extraction_batch_max_events,
            extraction_coalescing=self.extraction_coalescing,
            extraction_context_max_facts=self.extraction_context_max_facts,
            output_mode=self.llm_output_mode,
            max_tokens=self.llm_max_tokens,
            min_confidence=self.min_confidence,
            attribute_judge_enabled=self.judge_enabled,
            attribute_judge_acts_on=self.attribute_judge_acts_on,
        )

    @property
    def embedding(self) -> g.EmbedderSettings:
        """The embedding model, its runtime and its cache."""
        return g.EmbedderSettings(
            kind=self.embedder,
            model=self.embedding_model,
            dim=self.embedding_dim,
            model_dir=self.resolved_model_dir,
            threads=self.embed_threads,
            parallel=self.embed_parallel,
            batch_size=self.embed_batch_size,
            allow_spinning=self.embed_allow_spinning,
            token_budget=self.embed_token_budget,
            cache_size=self.embed_cache_size,
            episodic=self.episodic_embedding,
            fill_batch=self.episodic_fill_batch,
            max_backlog=self.episodic_max_backlog,
            episodic_nice=self.episodic_nice,
        )

    @property
    def worker(self) -> g.WorkerSettings:
        """Batching, retries, quarantine, stop and health, thresholds, the HTTP side."""
        return g.WorkerSettings(
            batch_size=self.batch_size,
            batch_within_s=self.batch_within_s,
            max_attempts=self.max_attempts,
            retry_delay_s=self.retry_delay_s,
            retry_max_delay_s=self.retry_max_delay_s,
            quarantine_after_deaths=self.quarantine_after_deaths,
            relay_max_attempts=self.relay_max_attempts,
            stop_timeout_s=self.stop_timeout_s,
            health_stall_s=self.health_stall_s,
            tracing_enabled=self.tracing_enabled,
            http_host=self.http_host,
            http_port=self.http_port,
            api_token=self.api_token,
            semantic_threshold=self.semantic_threshold,
            semantic_unsure_create=self.semantic_unsure_create,
            semantic_unsure_supersede=self.semantic_unsure_supersede,
            semantic_shape_penalty=self.semantic_shape_penalty,
            value_conflicts=self.value_conflicts,
            ended_values=self.ended_values,
        )

    @property
    def hygiene(self) -> g.HygieneSettings:
        """The hygiene pass's defaults."""
        return g.HygieneSettings(
            enabled=self.hygiene_enabled,
            interval_hours=self.hygiene_interval_hours,
            dry_run=self.hygiene_dry_run,
            max_supersedes_per_run=self.hygiene_max_supersedes_per_run,
            llm_assist_enabled=self.hygiene_llm_assist_enabled,
            promote_corroboration_threshold=self.hygiene_promote_corroboration_threshold,
            heartbeat_s=self.hygiene_heartbeat_s,
            boot_delay_s=self.hygiene_boot_delay_s,
            report_groups=self.hygiene_report_groups,
            report_banks=self.hygiene_report_banks,
            write_batch=self.hygiene_write_batch,
        )

    @property
    def stack(self) -> g.StackSettings:
        """The local development stack."""
        return g.StackSettings(
            state_dir=self.state_dir,
            kafka_controller_port=self.kafka_controller_port,
            kafka_home=self.kafka_home,
            kafka_heap=self.kafka_heap,
            local_llm_model=self.local_llm_model,
            local_llm_port=self.local_llm_port,
            local_llm_ctx=self.local_llm_ctx,
            local_llm_threads=self.local_llm_threads,
        )
