"""The LLM judge of the unsure band (``attribute_judge_enabled``; unset: on with a real
provider, off with ``fake``).

After a batch commits, the pipeline offers the judge every ``possible_same_attribute`` set the
batch opened or extended, in one call. Its decisions are published as ``resolve_conflict``
commands on ``memory.commands``, applied by the subject's partition owner like a person's:
so they become aliases through the log, and a replay rebuilds them.

Value conflicts (``processors.value_judge``) are offered the same way and asked after, one
yes/no question each (a linked value under its own name: the open question of
``processors.value_now``); only a ``yes`` (``replace``) becomes a command (``keep_new``). A
pair whose newer message ends the existing value (``OfferedPair.ended``) is decided without a
call, and published before any call is made, so a failing call cannot hold it; with the judge off
(the ``fake`` provider), it waits for a person like the rest.

Invariants: fails soft: any error of the call, a malformed answer or a refused publish is
logged and counted (``consolidator_attribute_judge_errors_total``) and changes nothing (the
sets stay for a person); it never holds the batch that triggered it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from processors import value_judge, value_now
from processors.attribute_judge import (
    FORMAT_NAME,
    JSON_SCHEMA,
    MAX_PAIRS,
    OfferedPair,
    build_prompt,
    commands,
    parse_answer,
)
from schemas import topics
from schemas.commands import Command
from schemas.settings_groups import LLMSettings
from streams.llm.client import StructuredChat
from streams.metrics import Metrics
from streams.ports import MessagePublisher

log = logging.getLogger(__name__)


class AttributeJudge:
    """One batched call per batch over the unsure pairs; decisions become commands."""

    def __init__(
        self,
        settings: LLMSettings,
        topic_prefix: str,
        publisher: MessagePublisher,
        metrics: Metrics,
    ) -> None:
        self.settings = settings
        self.publisher = publisher
        self.metrics = metrics
        self.chat = StructuredChat(settings, role="attribute judge")
        self.topic = topics.Topics(topic_prefix).commands

    async def judge(self, pairs: Sequence[OfferedPair]) -> int:
        """Ask, and publish the resolutions; returns how many were published (0 on failure).
        Attribute questions and value conflicts are asked in a call each, the second only
        when the first did not fail."""
        # Decided by the message's own evidence first: no call's failure can hold them.
        published = await self._publish_ended([p for p in pairs if p.ended])
        open_ = [p for p in pairs if not p.ended]
        attributes = [p for p in open_ if p.kind == "attribute"][:MAX_PAIRS]
        values = [p for p in open_ if p.kind in ("value", "now")][:MAX_PAIRS]
        for asked, kind in ((attributes, "attribute"), (values, "value")):
            if asked:
                done = await self._ask(asked, kind)
                if done < 0:
                    return published
                published += done
        return published

    async def _complete(self, messages: list[dict[str, str]], name: str, schema: Any) -> Any:
        return await asyncio.wait_for(
            self.chat.complete(messages, name, schema), timeout=self.settings.timeout_s
        )

    async def _publish_ended(self, pairs: Sequence[OfferedPair]) -> int:
        """The ``keep_new`` of every pair whose message ends the existing value, published
        without a call; 0 (logged and counted) when the publish fails."""
        now = datetime.now(UTC)
        cmds = value_judge.commands([p for p in pairs if p.kind == "value"], {}, now)
        cmds += commands([p for p in pairs if p.kind == "attribute"], {}, now, ())
        try:
            await self._publish(cmds)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # fail soft: the sets wait for a person
            self.metrics.inc("consolidator_attribute_judge_errors_total", kind="ended")
            log.warning("ended decisions not published: %s: %s", type(exc).__name__, exc)
            return 0
        self.metrics.inc("consolidator_attribute_judge_decisions_total", len(cmds), kind="ended")
        return len(cmds)

    async def _publish(self, cmds: Sequence[Command]) -> None:
        msgs: list[tuple[str, str | bytes | None, bytes, list[tuple[str, bytes]]]] = [
            (self.topic, c.key, orjson.dumps(c.model_dump(mode="json")), []) for c in cmds
        ]
        if msgs:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, self.publisher.publish, msgs)

    async def _verdict(self, q: OfferedPair) -> str:
        if q.kind == "now":
            answer = await self._complete(
                value_now.build_prompt(q), value_now.FORMAT_NAME, value_now.JSON_SCHEMA
            )
            now = value_now.parse(answer.text, lenient=answer.lenient)
            return value_now.verdict(now, q.candidate_value, q.existing_value)
        answer = await self._complete(
            value_judge.build_prompt(q), value_judge.FORMAT_NAME, value_judge.JSON_SCHEMA
        )
        return value_judge.parse(answer.text, lenient=answer.lenient)

    async def _ask(self, pairs: Sequence[OfferedPair], kind: str) -> int:
        verdicts: dict[str, str] = {}
        try:
            if kind == "value":
                # One question per conflict: yes/no (processors.value_judge), or the
                # attribute's value now for a linked value (processors.value_now).
                for q in pairs:
                    verdicts[q.set_id] = await self._verdict(q)
                cmds = value_judge.commands(pairs, verdicts, datetime.now(UTC))
            else:
                answer = await self._complete(build_prompt(pairs), FORMAT_NAME, JSON_SCHEMA)
                verdicts = parse_answer(answer.text, pairs, lenient=answer.lenient)
                acts_on = (
                    ("same", "different")
                    if self.settings.attribute_judge_acts_on == "both"
                    else ("different",)
                )
                cmds = commands(pairs, verdicts, datetime.now(UTC), acts_on)
            await self._publish(cmds)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # fail soft: the sets wait for a person
            self.metrics.inc("consolidator_attribute_judge_errors_total", kind=kind)
            log.warning("%s judge skipped: %s: %s", kind, type(exc).__name__, exc)
            return -1
        self.metrics.inc("consolidator_attribute_judge_calls_total", kind=kind)
        self.metrics.inc("consolidator_attribute_judge_decisions_total", len(cmds), kind=kind)
        return len(cmds)

    async def aclose(self) -> None:
        """Release the client."""
        await self.chat.aclose()
