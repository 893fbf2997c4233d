"""Failure routing: a failed job goes to the retry topic or the DLQ, never nowhere.

Invariants:
- A job fails forward: to ``memory.events.retry`` with ``attempt`` + 1 and ``not_before``
  while attempts remain; to the DLQ once they are spent, at once for a bug (``fatal``), and
  with kind ``provider_refused`` when the provider refused the request itself.
- A retry record the topic refuses is dead-lettered instead; a dead letter the topic refuses
  (too large) is sent again as a stub without the original bytes and with a hashed key.
- Only an outage raises (``BrokerUnavailable``): then nothing is acked and the batch is held.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence

from processors import envelopes
from schemas import topics
from schemas.settings import Settings
from streams.consolidation.jobs import Incoming, Job
from streams.metrics import Metrics
from streams.ports import SYSTEM_CLOCK, BrokerUnavailable, Clock, MessagePublisher, OutRecord

log = logging.getLogger(__name__)


class FailureRouter:
    """Re-queues and dead-letters on behalf of the pipeline."""

    def __init__(
        self,
        settings: Settings,
        publisher: MessagePublisher,
        metrics: Metrics,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.settings = settings
        self.publisher = publisher
        self.metrics = metrics
        self.topics = topics.Topics(settings.topic_prefix)
        self.clock = clock

    async def requeue(self, failed: Sequence[Job]) -> None:
        """Send each failed job to the retry topic or the DLQ."""
        retry: list[tuple[Incoming, OutRecord]] = []
        dead: list[tuple[Incoming, str]] = []
        refused: list[tuple[Incoming, str]] = []
        for j in failed:
            attempt = j.msg.attempt + 1
            assert j.error is not None
            if j.permanent:
                refused.append((j.msg, j.error))
                continue
            if j.fatal or attempt >= self.settings.max_attempts:
                dead.append((j.msg, j.error))
                continue
            not_before = self.clock.now().timestamp() + self.settings.retry_delay_s * attempt
            headers = envelopes.retry_headers(attempt, j.error, not_before)
            retry.append((j.msg, (self.topics.retry, j.msg.key, j.msg.value or b"", headers)))
            self.metrics.inc("consolidator_retries_total")
        if retry:
            results = await self.publish([m for _j, m in retry])
            # A message the retry topic refuses (too large once decompressed...) dies here.
            for (msg, _m), err in zip(retry, results, strict=True):
                if err:
                    dead.append((msg, f"retry refused: {err}"))
        if dead:
            await self.dead_letter(dead, "job_failed")
        if refused:
            await self.dead_letter(refused, "provider_refused")

    async def publish(self, msgs: Sequence[OutRecord]) -> list[str | None]:
        """Publish in a thread; per message None (acknowledged) or the refusal."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.publisher.publish_each, msgs)

    async def dead_letter(self, dead: Sequence[tuple[Incoming, str]], kind: str) -> None:
        """Dead-letter each message with its reason and source; a record the topic refuses
        is sent again as a stub (no original bytes, a hashed key). Raises
        ``BrokerUnavailable`` only when not even the stub was taken."""
        limit = self.publisher.max_message_bytes
        msgs: list[OutRecord] = []
        for msg, why in dead:
            value, stub = envelopes.dead_letter_value(
                msg.value, limit, msg.topic, msg.partition, msg.offset
            )
            headers = envelopes.dead_letter_headers(
                why, kind, msg.topic, msg.partition, msg.offset, msg.attempt
            )
            if stub:
                headers.append(("stub", b"true"))
            msgs.append((self.topics.dlq, msg.key, value, headers))
            self.metrics.inc("consolidator_dlq_total", kind=kind)
            log.warning(
                "dead-lettered %s message at %s/%s/%s: %s",
                kind,
                msg.topic,
                msg.partition,
                msg.offset,
                envelopes.one_line(why, 300),
            )
        results = await self.publish(msgs)
        again: list[OutRecord] = []
        for (msg, _r), (topic, key, _v, sent), err in zip(dead, msgs, results, strict=True):
            if err is None:
                continue
            value, _stub = envelopes.dead_letter_value(
                msg.value, 0, msg.topic, msg.partition, msg.offset
            )
            raw_key = key.encode() if isinstance(key, str) else key
            digest = hashlib.sha256(raw_key or b"").hexdigest().encode()
            again.append((topic, digest, value, [*sent, ("stub", b"true")]))
        if again:
            refused = [err for err in await self.publish(again) if err]
            if refused:
                raise BrokerUnavailable(f"dead-letter topic refused a stub: {refused[0]}")
