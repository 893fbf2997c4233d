"""The baselines of ``bench/consolidation.py``, measured in the same run as the pipeline.

(a) a raw confluent-kafka loop that consumes the same N event messages and produces one
message per input to another topic, then flushes (``raw_loop``); (b) the embedder alone
(``streams.embedding.embedder.make_embedder``, same settings) on the texts the write path
embeds, chunked and deduplicated per ``batch_size`` events as ``VectorStage.embed`` does,
less what its cache holds (``embed_texts_per_batch``); event contents only when they are
embedded inline (``CONSOLIDATOR_EPISODIC_EMBEDDING=inline``).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from tests.support.kafka_io import producer_config


def embed_texts_per_batch(
    events: list[dict[str, Any]], batch_size: int, contents: bool = True, cache_size: int = 0
) -> list[list[str]]:
    """The texts the write path embeds, per batch of ``batch_size`` events (deduplicated):
    the contents only when they are embedded inline, and candidate texts not embedded in
    the last ``cache_size`` distinct candidate texts (the pipeline's LRU, approximately)."""
    from collections import OrderedDict

    from processors.attributes import attribute
    from processors.normalize import embedding_text

    cache: OrderedDict[str, None] = OrderedDict()
    out = []
    for start in range(0, len(events), batch_size):
        texts: dict[str, None] = {}
        cands: dict[str, None] = {}
        for e in events[start : start + batch_size]:
            if contents:
                texts[e["content"]] = None
            for c in e["metadata"]["fake_candidates"]:
                p = c.get("predicate")
                cands[embedding_text(p, c.get("value"), c.get("statement"))] = None
                if p:
                    cands[attribute(p).text] = None
        for t in cands:
            if t in cache:
                cache.move_to_end(t)
            elif t not in texts:
                texts[t] = None
                cache[t] = None
                if len(cache) > cache_size:
                    cache.popitem(last=False)
        out.append(list(texts))
    return out


def raw_loop(settings: Any, ends: dict[int, int], n: int) -> dict[str, Any]:
    """Baseline (a): consume the same n event messages, produce one per input, flush."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from schemas import topics
    from streams.kafka.client import client_config

    src = topics.Topics(settings.topic_prefix).events
    dst = f"{settings.topic_prefix}bench.raw-out"
    admin = AdminClient(client_config(settings.kafka))
    for fut in admin.create_topics(
        [NewTopic(dst, num_partitions=settings.partitions, replication_factor=1)]
    ).values():
        fut.result()
    consumer = Consumer(
        client_config(settings.kafka)
        | {
            "group.id": f"bench-raw-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    producer = Producer(producer_config(settings))
    # Warm the producer's metadata for dst so the timed loop does not include topic creation.
    producer.produce(dst, value=b"warmup")
    producer.flush(30)
    t0 = time.perf_counter()
    consumer.assign([TopicPartition(src, p, OFFSET_BEGINNING) for p in ends])
    done = 0
    while done < n:
        for m in consumer.consume(1000, 1.0):
            if m.error() or m.offset() >= ends[m.partition()]:
                continue
            while True:
                try:
                    producer.produce(dst, value=m.value(), key=m.key())
                    break
                except BufferError:
                    producer.poll(0.05)
            done += 1
        producer.poll(0)
        if time.perf_counter() - t0 > 300:
            raise RuntimeError(f"raw loop stuck at {done}/{n}")
    left = producer.flush(60)
    elapsed = time.perf_counter() - t0
    consumer.close()
    if left:
        raise RuntimeError(f"raw loop: {left} messages not acknowledged")
    return {"events": n, "seconds": round(elapsed, 3), "events_per_s": round(n / elapsed, 1)}


def measure_baseline(
    mode: str,
    settings: Any,
    events: list[dict[str, Any]],
    n: int,
    ends: dict[int, int],
    result: dict[str, Any],
) -> None:
    """The baseline of ``mode`` (the worker stopped): ``result``'s baseline, ratio and target."""
    if mode == "a":
        print(
            f"[{mode}] baseline: raw consume-and-produce loop over the same {n} messages",
            flush=True,
        )
        base_res = raw_loop(settings, ends, n)
        result["baseline"] = {
            "kind": "raw confluent-kafka consume -> produce -> flush",
            **base_res,
        }
        result["ratio_pipeline_to_baseline"] = round(
            result["pipeline"]["events_per_s"] / base_res["events_per_s"], 4
        )
        result["target"] = {
            "events_per_s": 3000,
            "met": result["pipeline"]["events_per_s"] >= 3000,
        }
    else:
        from streams.embedding.embedder import make_embedder

        print(f"[{mode}] baseline: embedder alone on the same texts", flush=True)
        chunks = embed_texts_per_batch(
            events[:n],
            settings.batch_size,
            contents=settings.episodic_embedding == "inline",
            cache_size=settings.embed_cache_size,
        )
        emb = make_embedder(settings.embedding)
        emb.embed(["warm-up"])
        t0 = time.perf_counter()
        for chunk in chunks:
            emb.embed(chunk)
        secs = time.perf_counter() - t0
        n_texts = sum(len(c) for c in chunks)
        result["baseline"] = {
            "kind": "streams.embedding.embedder.make_embedder(settings).embed, in-process, "
            f"chunks of batch_size={settings.batch_size} events",
            "texts": n_texts,
            "embed_calls": len(chunks),
            "seconds": round(secs, 3),
            "texts_per_s": round(n_texts / secs, 1),
            "events_per_s": round(n / secs, 1),
        }
        result["ratio_pipeline_to_baseline"] = round(
            result["pipeline"]["events_per_s"] / result["baseline"]["events_per_s"], 4
        )
        result["target"] = {"ratio": 0.9, "met": result["ratio_pipeline_to_baseline"] >= 0.9}
        filled = result["pipeline"].get("episodic_filled_after_s")
        if filled:
            # Deferred: the facts' rate above is against the candidate texts only; here the
            # rate at which events end fully embedded (contents filled in too) against the
            # embedder alone on every text the run embeds.
            every = embed_texts_per_batch(
                events[:n], settings.batch_size, contents=True, cache_size=settings.embed_cache_size
            )
            t0 = time.perf_counter()
            for chunk in every:
                emb.embed(chunk)
            secs_all = time.perf_counter() - t0
            result["baseline_every_text"] = {
                "texts": sum(len(c) for c in every),
                "seconds": round(secs_all, 3),
                "events_per_s": round(n / secs_all, 1),
            }
            result["fully_embedded"] = {
                "events_per_s": round(n / filled, 1),
                "ratio_to_baseline_every_text": round(secs_all / filled, 4),
            }
    print(
        f"[{mode}] baseline {result['baseline']['events_per_s']:,.0f} events/s, ratio "
        f"{result['ratio_pipeline_to_baseline']:.3f}",
        flush=True,
    )
