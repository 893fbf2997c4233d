"""Smoke tests: each proves one real part of the stack works on this machine."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    NewTopic,
)

from schemas.settings import Settings
from streams.embedding.embedder import FastEmbedEmbedder

pytestmark = pytest.mark.integration


def _create_topic(
    bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})
    admin.create_topics([new], operation_timeout=30)[name].result(timeout=30)


@dataclass(frozen=True)
class Record:
    key: bytes
    value: bytes
    partition: int
    offset: int
    headers: dict[str, bytes]


def _consume(bootstrap: str, topic: str, count: int, timeout: float = 30.0) -> list[Record]:
    """Read ``count`` messages of ``topic`` from the beginning with a throwaway group."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    messages: list[Record] = []
    deadline = time.monotonic() + timeout
    try:
        while len(messages) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            key, value, partition, offset = msg.key(), msg.value(), msg.partition(), msg.offset()
            assert key is not None and value is not None
            assert partition is not None and offset is not None
            raw = msg.headers() or []
            pairs = list(raw.items()) if isinstance(raw, dict) else raw
            headers = {k: v for k, v in pairs if isinstance(v, bytes)}
            messages.append(Record(key, value, partition, offset, headers))
    finally:
        consumer.close()
    return messages


def test_confluent_round_trip(kafka_bootstrap: str, unique_topic: Callable[..., str]) -> None:
    topic = unique_topic("roundtrip")
    _create_topic(kafka_bootstrap, topic, partitions=3)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    sent = [(f"subject-{i % 3}".encode(), f"value-{i}".encode()) for i in range(9)]
    for key, value in sent:
        producer.produce(topic, key=key, value=value, headers={"attempt": b"1"})
    assert producer.flush(30) == 0

    got = _consume(kafka_bootstrap, topic, len(sent))
    assert sorted((m.key, m.value) for m in got) == sorted(sent)
    assert all(m.headers["attempt"] == b"1" for m in got)
    by_key: dict[bytes, list[tuple[int, int, bytes]]] = defaultdict(list)
    for m in got:
        by_key[m.key].append((m.partition, m.offset, m.value))
    for key, rows in by_key.items():
        assert len({p for p, _, _ in rows}) == 1, "one key, one partition"
        in_offset_order = [v for _, _, v in sorted(rows)]
        assert in_offset_order == [v for k, v in sent if k == key], "per-key order kept"


async def test_faust_agent_transforms_and_commits(
    kafka_bootstrap: str, unique_topic: Callable[..., str], tmp_path: Path
) -> None:
    import faust

    n = 20
    source, sink = unique_topic("faust-in"), unique_topic("faust-out")
    _create_topic(kafka_bootstrap, source)
    _create_topic(kafka_bootstrap, sink)
    app_id = f"smoke-faust-{uuid.uuid4().hex[:8]}"
    app = faust.App(
        app_id,
        broker=f"kafka://{kafka_bootstrap}",
        store="memory://",
        web_enabled=False,
        datadir=str(tmp_path / "faust"),
        topic_partitions=1,
        topic_replication_factor=1,
        consumer_auto_offset_reset="earliest",
        # Commit quickly so the committed offset can be observed within the test.
        broker_commit_every=1,
        broker_commit_interval=0.2,
    )
    src = app.topic(source, key_serializer="raw", value_serializer="raw")
    dst = app.topic(sink, key_serializer="raw", value_serializer="raw")

    @app.agent(src)
    async def shout(stream):  # type: ignore[no-untyped-def]
        async for event in stream.events():
            await dst.send(key=event.key, value=event.value.upper())

    await app.start()
    try:
        producer = Producer({"bootstrap.servers": kafka_bootstrap})
        for i in range(n):
            producer.produce(source, key=f"k{i}".encode(), value=f"hello {i}".encode())
        assert producer.flush(30) == 0

        # confluent-kafka blocks: keep it off the loop that runs the faust app.
        out = await asyncio.to_thread(_consume, kafka_bootstrap, sink, n, 60.0)
        assert sorted(m.value for m in out) == sorted(f"HELLO {i}".encode() for i in range(n))
        assert {m.key for m in out} == {f"k{i}".encode() for i in range(n)}

        committed = await asyncio.to_thread(_wait_committed, kafka_bootstrap, app_id, source, n)
        assert committed == n
    finally:
        await app.stop()
        # faust declares its own internal topics (e.g. <app id>-__assignor-__leader).
        admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
        internal = [t for t in admin.list_topics(timeout=10).topics if t.startswith(app_id)]
        if internal:
            for future in admin.delete_topics(internal, operation_timeout=10).values():
                future.result()


def _wait_committed(
    bootstrap: str, group: str, topic: str, want: int, timeout: float = 30.0
) -> int:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        deadline = time.monotonic() + timeout
        offset = -1
        while time.monotonic() < deadline:
            (tp,) = reader.committed([TopicPartition(topic, 0)], timeout=10)
            offset = tp.offset
            if offset >= want:
                break
            time.sleep(0.2)
        return offset
    finally:
        reader.close()


def test_compacted_topic_folds_to_latest(
    kafka_bootstrap: str, unique_topic: Callable[..., str]
) -> None:
    topic = unique_topic("compacted")
    _create_topic(kafka_bootstrap, topic, config={"cleanup.policy": "compact"})
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    assert configs["cleanup.policy"].value == "compact"

    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for key, value in [(b"k1", b"a"), (b"k2", b"b"), (b"k1", b"c")]:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0

    consumer = Consumer(
        {"bootstrap.servers": kafka_bootstrap, "group.id": f"fold-{uuid.uuid4().hex[:8]}"}
    )
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        state: dict[bytes, bytes] = {}
        deadline = time.monotonic() + 30
        position = 0
        while position < high and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            k, v, off = msg.key(), msg.value(), msg.offset()
            assert k is not None and v is not None and off is not None
            state[k] = v
            position = off + 1
    finally:
        consumer.close()
    assert state == {b"k1": b"c", b"k2": b"b"}


def test_pgvector_hnsw_index_is_used(settings: Settings) -> None:
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql

    rng = np.random.default_rng(7)
    rows = rng.standard_normal((2000, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    # Plant four near neighbours of row 0 at growing distances, so the true top 5 is
    # unambiguous (random 384-d vectors are all about equally far from each other).
    query_id = 0
    for rank, scale in enumerate((0.05, 0.1, 0.15, 0.2), start=1):
        v = rows[query_id] + scale * rng.standard_normal(384).astype(np.float32) / np.sqrt(384)
        rows[rank * 100] = v / np.linalg.norm(v)

    schema = settings.database_schema
    index = "items_embedding_hnsw"
    assert settings.database_url is not None
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema)))
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, embedding vector(384) NOT NULL)")
        with (
            conn.cursor() as cur,
            cur.copy("COPY items (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy,
        ):
            copy.set_types(["int4", "vector"])
            for i, row in enumerate(rows):
                copy.write_row((i, row))
        conn.execute(
            sql.SQL("CREATE INDEX {} ON items USING hnsw (embedding vector_cosine_ops)").format(
                sql.Identifier(index)
            )
        )
        conn.execute("ANALYZE items")

        query = "SELECT id, embedding <=> %s AS d FROM items ORDER BY embedding <=> %s LIMIT 5"
        q = rows[query_id]
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + query, (q, q)).fetchall())
        assert index in plan, plan

        got = conn.execute(query, (q, q)).fetchall()
    exact = np.argsort(1 - rows @ q, kind="stable")[:5]
    assert [r[0] for r in got] == exact.tolist() == [0, 100, 200, 300, 400]
    assert got[0][1] == pytest.approx(0.0, abs=1e-5)
    assert all(a[1] <= b[1] for a, b in itertools.pairwise(got))


def test_fastembed_adapter_semantics(fastembed_embedder: FastEmbedEmbedder) -> None:
    texts = ["The cat sits on the mat", "A cat is sitting on the mat"]
    texts.append("Quarterly revenue grew by 8 percent")
    cat, paraphrase, revenue = fastembed_embedder.embed(texts)
    assert fastembed_embedder.dim == 384
    for v in (cat, paraphrase, revenue):
        assert v.shape == (384,) and v.dtype == np.float32
        assert float(np.linalg.norm(v)) == pytest.approx(1.0, abs=1e-5)
    assert float(cat @ paraphrase) > float(cat @ revenue) + 0.3
    assert fastembed_embedder.embed([]).shape == (0, 384)


def test_fastembed_rows_follow_the_callers_order_whatever_the_lengths(
    fastembed_embedder: FastEmbedEmbedder,
) -> None:
    # The adapter runs texts shortest first; each row must still be its own text's vector.
    texts = ["a much longer sentence about where the user has lived for years", "hi", "Bob"]
    texts += ["I moved to Lisbon in May.", "x" * 400, "", "ok then"]
    together = fastembed_embedder.embed(texts)
    alone = np.concatenate([fastembed_embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(together, alone, rtol=0, atol=1e-5)
    assert together.flags.c_contiguous and together.dtype == np.float32


def test_fastembed_long_texts_run_in_small_runs_within_the_token_budget(
    fastembed_embedder: FastEmbedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Texts at the model's 256-token truncation: 64 of them in one run took a process to
    # 1.4 GiB; the budget splits them (and a short text still rides with its peers).
    model = fastembed_embedder._model
    runs: list[int] = []
    real = model.embed

    def recording(texts: list[str], batch_size: int) -> object:
        runs.append(len(texts))
        return real(texts, batch_size=batch_size)

    monkeypatch.setattr(model, "embed", recording)
    texts = [f"{i} " + "lorem ipsum dolor " * 120 for i in range(9)] + ["short", "a bit longer"]
    got = fastembed_embedder.embed(texts)
    counts = fastembed_embedder._lengths(texts)
    assert max(counts) == 256  # truncated like the model's own tokenisation
    assert sum(runs) == len(texts)
    assert all(n * 256 <= fastembed_embedder.token_budget or n == 1 for n in runs[1:])
    assert runs[0] == 2  # the two short texts, first
    monkeypatch.undo()
    alone = np.concatenate([fastembed_embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(got, alone, rtol=0, atol=1e-5)


def test_fastembed_session_does_not_spin_and_embeds_the_same(
    fastembed_embedder: FastEmbedEmbedder,
) -> None:
    session = fastembed_embedder._model.model.model
    options = session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert fastembed_embedder.spinning is False
    spinning = FastEmbedEmbedder(
        Path(session._model_path).parent, fastembed_embedder.name, allow_spinning=True
    )
    assert spinning.spinning is True
    assert options.enable_cpu_mem_arena is False
    texts = ["I live in Austin.", 'home_city {"value":"Austin"}', "a" * 3000]
    expected = fastembed_embedder.embed(texts)
    np.testing.assert_allclose(expected, spinning.embed(texts), rtol=0, atol=1e-6)
