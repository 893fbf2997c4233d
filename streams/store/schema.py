"""The PostgreSQL schema, applied idempotently at worker start.

Invariants enforced by the database itself, so a bug elsewhere fails loudly:
- ``facts_one_active``: at most one active fact per (project, subject, predicate);
- ``conflicts_one_open``: at most one open conflict set per (project, subject, predicate);
- ``events`` primary key (project_id, event_id): an event is stored once;
- ``outbox``: one row per change-event message, written in the same transaction as the
  change, published (and marked) by the relay after commit, or dead-lettered after
  repeated refusals;
- ``fact_sources``: every source event of every fact (a fact row keeps the newest window);
- ``commands_applied``: one row per (project_id, command_id);
- ``ingest_attempts``: a row per consumed message whose work started and did not finish;
- ``erasures``: one content-free row per applied erasure (project, subject, fact id, a hash
  of the erased attribute's name, time, command id).
"""

from __future__ import annotations

from schemas.base import MAX_LISTED_IDS
from streams.store.episodic import WAITING


def ddl(dim: int) -> list[str]:
    """The schema's statements, in order (idempotent)."""
    return [
        "CREATE EXTENSION IF NOT EXISTS vector",
        f"""
        CREATE TABLE IF NOT EXISTS events (
            project_id text NOT NULL,
            event_id text NOT NULL,
            subject_id text NOT NULL,
            occurred_at timestamptz NOT NULL,
            kind text NOT NULL,
            role text,
            content text NOT NULL,
            source text,
            metadata jsonb NOT NULL DEFAULT '{{}}',
            embedding vector({dim}),
            recorded_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (project_id, event_id)
        )""",
        "CREATE INDEX IF NOT EXISTS events_subject ON events (project_id, subject_id)",
        # Events waiting for their deferred embedding (streams.store.episodic.WAITING): small
        # when the filler keeps up, so claiming and counting them stays cheap at any size.
        f"CREATE INDEX IF NOT EXISTS events_unembedded ON events (recorded_at) WHERE {WAITING}",
        # No HNSW index on events.embedding: every read is scoped to one subject, where the
        # btree on (project_id, subject_id) plus an exact distance is both exact and fast,
        # and the index cost ~0.65 ms of PostgreSQL time per stored event.
        "DROP INDEX IF EXISTS events_embedding",
        f"""
        CREATE TABLE IF NOT EXISTS facts (
            id text PRIMARY KEY,
            project_id text NOT NULL,
            subject_id text NOT NULL,
            predicate text,
            value jsonb NOT NULL,
            statement text,
            status text NOT NULL CHECK (status IN ('candidate','active','superseded','rejected')),
            pinned boolean NOT NULL DEFAULT false,
            reinforcement_count integer NOT NULL DEFAULT 0,
            last_reinforced_at timestamptz,
            source_event_ids text[] NOT NULL,
            valid_from timestamptz NOT NULL,
            valid_to timestamptz,
            supersedes_id text,
            superseded_by text,
            superseded_reason text,
            conflict_set_id text,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            embedding vector({dim})
        )""",
        """CREATE UNIQUE INDEX IF NOT EXISTS facts_one_active
           ON facts (project_id, subject_id, predicate)
           WHERE status = 'active' AND predicate IS NOT NULL""",
        "CREATE INDEX IF NOT EXISTS facts_subject ON facts (project_id, subject_id, status)",
        """
        CREATE TABLE IF NOT EXISTS conflict_sets (
            id text PRIMARY KEY,
            project_id text NOT NULL,
            subject_id text NOT NULL,
            predicate text NOT NULL,
            status text NOT NULL CHECK (status IN ('open','resolved')),
            fact_ids text[] NOT NULL,
            resolution text,
            created_at timestamptz NOT NULL,
            resolved_at timestamptz
        )""",
        "ALTER TABLE conflict_sets ADD COLUMN IF NOT EXISTS reason text NOT NULL DEFAULT 'value'",
        # One open set per (subject, predicate) and reason: a possible_same_attribute set is
        # keyed by the candidate's predicate, a value conflict by the active fact's.
        "DROP INDEX IF EXISTS conflicts_one_open",
        """CREATE UNIQUE INDEX IF NOT EXISTS conflicts_one_open_reason
           ON conflict_sets (project_id, subject_id, predicate, reason) WHERE status = 'open'""",
        # Learned predicate aliases (processors.commands): made by resolutions, per project.
        """
        CREATE TABLE IF NOT EXISTS predicate_aliases (
            project_id text NOT NULL,
            predicate text NOT NULL,
            target text NOT NULL,
            kind text NOT NULL CHECK (kind IN ('same', 'distinct')),
            conflict_set_id text,
            command_id text,
            created_at timestamptz NOT NULL,
            PRIMARY KEY (project_id, predicate, target)
        )""",
        """CREATE INDEX IF NOT EXISTS predicate_aliases_target
           ON predicate_aliases (project_id, target)""",
        """
        CREATE TABLE IF NOT EXISTS commands_applied (
            command_id text NOT NULL,
            project_id text NOT NULL,
            subject_id text NOT NULL,
            outcome text NOT NULL,
            applied_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (project_id, command_id)
        )""",
        # Before commands were keyed per project the key was command_id alone.
        """
        DO $$ BEGIN
            IF EXISTS (
                SELECT 1 FROM pg_index WHERE indrelid = 'commands_applied'::regclass
                AND indisprimary AND indnatts = 1
            ) THEN
                ALTER TABLE commands_applied DROP CONSTRAINT commands_applied_pkey;
                ALTER TABLE commands_applied ADD PRIMARY KEY (project_id, command_id);
            END IF;
        END $$""",
        # Full provenance of every fact, paged by seq; a fact row keeps only the newest ids.
        """
        CREATE TABLE IF NOT EXISTS fact_sources (
            seq bigserial,
            project_id text NOT NULL,
            fact_id text NOT NULL,
            event_id text NOT NULL,
            PRIMARY KEY (fact_id, event_id)
        )""",
        "CREATE INDEX IF NOT EXISTS fact_sources_page ON fact_sources (fact_id, seq)",
        # The facts an event is a source of (the context marks an event all of whose facts
        # were replaced since: streams.store.search.replaced_events).
        "CREATE INDEX IF NOT EXISTS fact_sources_event ON fact_sources (project_id, event_id)",
        "ALTER TABLE facts ADD COLUMN IF NOT EXISTS source_count integer",
        # A note's exact-equality key (processors.normalize.statement_key), so the write path
        # loads only the notes a batch can reinforce, never all of a subject's notes.
        "ALTER TABLE facts ADD COLUMN IF NOT EXISTS note_key text",
        # processors.hygiene.dedup_key of the statement (computed in Python: NFKC, casefold);
        # rows without one, or of an older key version, are filled by Store.migrate.
        "ALTER TABLE facts ADD COLUMN IF NOT EXISTS dedup_key text",
        """UPDATE facts SET note_key = normalize(btrim(statement, E' \t\n\r\f\v'), NFC)
           WHERE predicate IS NULL AND statement IS NOT NULL AND note_key IS NULL""",
        """CREATE INDEX IF NOT EXISTS facts_active_notes ON facts (project_id, subject_id, note_key)
           WHERE status = 'active' AND predicate IS NULL""",
        "ALTER TABLE conflict_sets ADD COLUMN IF NOT EXISTS fact_count integer",
        # Rows written before the windows existed: provenance copied out once, lists cut.
        """
        INSERT INTO fact_sources (project_id, fact_id, event_id)
        SELECT project_id, id, unnest(source_event_ids) FROM facts WHERE source_count IS NULL
        ON CONFLICT DO NOTHING""",
        f"""
        UPDATE facts SET source_count = cardinality(source_event_ids),
            source_event_ids = source_event_ids[
                greatest(1, cardinality(source_event_ids) - {MAX_LISTED_IDS - 1}):]
        WHERE source_count IS NULL""",
        f"""
        UPDATE conflict_sets SET fact_count = cardinality(fact_ids),
            fact_ids = fact_ids[1:1] || fact_ids[
                greatest(2, cardinality(fact_ids) - {MAX_LISTED_IDS - 2}):]
        WHERE fact_count IS NULL""",
        "ALTER TABLE facts ALTER COLUMN source_count SET NOT NULL",
        "ALTER TABLE conflict_sets ALTER COLUMN fact_count SET NOT NULL",
        # Defaults only after the backfill above (0 reads as "count the listed ids").
        "ALTER TABLE facts ALTER COLUMN source_count SET DEFAULT 0",
        "ALTER TABLE conflict_sets ALTER COLUMN fact_count SET DEFAULT 0",
        # Erasure records (streams.store.erase): content-free, they keep a forgotten scope
        # forgotten.
        """
        CREATE TABLE IF NOT EXISTS erasures (
            project_id text NOT NULL,
            subject_id text NOT NULL,
            fact_id text,
            attribute_key text,
            erased_at timestamptz NOT NULL,
            command_id text NOT NULL,
            PRIMARY KEY (project_id, command_id)
        )""",
        "CREATE INDEX IF NOT EXISTS erasures_subject ON erasures (project_id, subject_id)",
        # Poison-pill bookkeeping: a row per message whose work started and has not ended.
        """
        CREATE TABLE IF NOT EXISTS ingest_attempts (
            consumer text NOT NULL,
            topic text NOT NULL,
            part integer NOT NULL,
            msg_offset bigint NOT NULL,
            attempts integer NOT NULL DEFAULT 1,
            first_at timestamptz NOT NULL DEFAULT now(),
            last_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (consumer, topic, part, msg_offset)
        )""",
        """
        CREATE TABLE IF NOT EXISTS outbox (
            seq bigserial PRIMARY KEY,
            change_id text NOT NULL,
            topic text NOT NULL,
            key text NOT NULL,
            value bytea NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            published_at timestamptz
        )""",
        "CREATE UNIQUE INDEX IF NOT EXISTS outbox_change ON outbox (change_id, topic)",
        # A row the broker keeps refusing is retried this many times, then dead-lettered.
        "ALTER TABLE outbox ADD COLUMN IF NOT EXISTS attempts integer NOT NULL DEFAULT 0",
        "ALTER TABLE outbox ADD COLUMN IF NOT EXISTS last_error text",
        # The cause's W3C trace context (tracing on): published as the change's header.
        "ALTER TABLE outbox ADD COLUMN IF NOT EXISTS traceparent text",
        "ALTER TABLE outbox ADD COLUMN IF NOT EXISTS dead_lettered boolean NOT NULL DEFAULT false",
        "CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (seq) WHERE published_at IS NULL",
        # Rules (streams.store.rules): a bank's managed and hand-written rules; entries append-only.
        """
        CREATE TABLE IF NOT EXISTS rules (
            project_id text NOT NULL,
            name text NOT NULL,
            kind text NOT NULL CHECK (kind IN ('managed','manual')),
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (project_id, name)
        )""",
        """
        CREATE TABLE IF NOT EXISTS rule_entries (
            seq bigserial PRIMARY KEY,
            project_id text NOT NULL,
            rule_name text NOT NULL,
            text text NOT NULL CHECK (length(text) BETWEEN 1 AND 1000),
            fingerprint text NOT NULL,
            source_id text,
            run_id text,
            created_at timestamptz NOT NULL DEFAULT now(),
            FOREIGN KEY (project_id, rule_name) REFERENCES rules (project_id, name)
        )""",
        """CREATE UNIQUE INDEX IF NOT EXISTS rule_entries_fingerprint
           ON rule_entries (project_id, rule_name, fingerprint)""",
        """
        CREATE OR REPLACE FUNCTION rule_entries_append_only() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'rule entries are append-only';
        END $$""",
        """
        DO $$ BEGIN
            IF NOT EXISTS (
                SELECT 1 FROM pg_trigger
                WHERE tgname = 'rule_entries_append_only'
                AND tgrelid = 'rule_entries'::regclass
            ) THEN
                CREATE TRIGGER rule_entries_append_only BEFORE UPDATE OR DELETE ON rule_entries
                FOR EACH ROW EXECUTE FUNCTION rule_entries_append_only();
            END IF;
        END $$""",
    ]


INSERT_EVENT = """
INSERT INTO events (project_id, event_id, subject_id, occurred_at, kind, role, content, source,
                    metadata, embedding)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (project_id, event_id) DO NOTHING
"""

FACT_COLUMNS = (
    "id",
    "project_id",
    "subject_id",
    "predicate",
    "value",
    "statement",
    "status",
    "pinned",
    "reinforcement_count",
    "last_reinforced_at",
    "source_event_ids",
    "source_count",
    "valid_from",
    "valid_to",
    "supersedes_id",
    "superseded_by",
    "superseded_reason",
    "conflict_set_id",
    "created_at",
    "updated_at",
)

CONFLICT_COLUMNS = (
    "id",
    "project_id",
    "subject_id",
    "predicate",
    "status",
    "reason",
    "fact_ids",
    "fact_count",
    "resolution",
    "created_at",
    "resolved_at",
)

UPSERT_FACT = f"""
INSERT INTO facts ({", ".join(FACT_COLUMNS)}, note_key, dedup_key, embedding)
VALUES ({", ".join(["%s"] * (len(FACT_COLUMNS) + 3))})
ON CONFLICT (id) DO UPDATE SET
{", ".join(f"{c} = EXCLUDED.{c}" for c in FACT_COLUMNS[1:])},
note_key = EXCLUDED.note_key,
dedup_key = EXCLUDED.dedup_key,
embedding = COALESCE(EXCLUDED.embedding, facts.embedding)
"""

UPSERT_CONFLICT = f"""
INSERT INTO conflict_sets ({", ".join(CONFLICT_COLUMNS)})
VALUES ({", ".join(["%s"] * len(CONFLICT_COLUMNS))})
ON CONFLICT (id) DO UPDATE SET
{", ".join(f"{c} = EXCLUDED.{c}" for c in CONFLICT_COLUMNS[1:])}
"""
