"""A LangGraph ``BaseStore`` over the worker's HTTP API (:mod:`streams.client`), so a graph
compiled with ``store=ConsolidatorStore(...)`` keeps its long-term memory here.

Mapping: the store is bound to one project (configuration, and its token's scope); a
namespace is ``prefix + (subject_id,)``. ``put`` publishes the value as a RawEvent of that
subject (``value["content"]``, else the value as JSON) and the worker consolidates it;
``search`` is the subject's context for the query, one item per fact; ``get`` is one fact
by id; ``put(..., None)`` / ``delete`` forgets the fact of that id.

Invariants:
- The project never comes from a namespace, a key or a value: a namespace that is not
  ``prefix + (one scope id,)`` is an ``InvalidNamespaceError`` and nothing is sent.
- A put is idempotent: its event id is a digest of (namespace, key, value), so putting the
  same value again is dropped by the worker as a duplicate, and a new value is a new event.
- Items are facts, never raw events: ``key`` is the fact id, ``value`` the fact's fields,
  ``score`` the context's ranking score; ``updated_at`` moves when the worker changes it.
- ``list_namespaces`` is not offered (the API lists no subjects): NotImplementedError.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable
from typing import Any

import orjson
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from schemas.base import is_scope_id
from schemas.facts import Fact
from streams.client import Client, fact_summary

MAX_SEARCH = 100  # the context's largest k


def _matches(value: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    return not wanted or all(value.get(k) == v for k, v in wanted.items())


class ConsolidatorStore(BaseStore):
    """LangGraph's store interface on one project of the Memory Consolidator."""

    def __init__(self, client: Client, project: str, prefix: tuple[str, ...] = ()):
        if not is_scope_id(project):
            raise ValueError(f"project {project!r} is not a scope id")
        self.client = client
        self.project = project
        self.prefix = tuple(prefix)

    def _subject(self, namespace: tuple[str, ...]) -> str:
        n = len(self.prefix)
        ns = tuple(namespace)
        if len(ns) != n + 1 or ns[:n] != self.prefix or not is_scope_id(ns[n]):
            raise InvalidNamespaceError(
                f"namespace must be {(*self.prefix, '<subject id>')!r}, not {ns!r}"
            )
        return ns[n]

    def _item(self, namespace: tuple[str, ...], f: Fact) -> Item:
        return Item(
            value=fact_summary(f),
            key=f.id,
            namespace=namespace,
            created_at=f.created_at,
            updated_at=f.updated_at,
        )

    def _get(self, op: GetOp) -> Item | None:
        subject = self._subject(op.namespace)
        cursor = None
        while True:  # a subject's facts, page by page, until the id is found
            page = self.client.facts(self.project, subject, limit=1000, cursor=cursor)
            for f in page.facts:
                if f.id == op.key:
                    return self._item(tuple(op.namespace), f)
            cursor = page.next_cursor
            if cursor is None:
                return None

    def _search(self, op: SearchOp) -> list[SearchItem]:
        namespace = tuple(op.namespace_prefix)
        subject = self._subject(namespace)
        k = max(1, min(MAX_SEARCH, op.limit + op.offset))
        ctx = self.client.recall(self.project, subject, op.query, k=k)
        items = [
            SearchItem(
                namespace=namespace,
                key=c.fact.id,
                value=fact_summary(c.fact),
                created_at=c.fact.created_at,
                updated_at=c.fact.updated_at,
                score=c.score,
            )
            for c in ctx.facts
            if _matches(fact_summary(c.fact), op.filter)
        ]
        return items[op.offset : op.offset + op.limit]

    def _put(self, op: PutOp) -> None:
        subject = self._subject(op.namespace)
        if op.value is None:
            self.client.erase(self.project, subject, fact_id=op.key)
            return
        value = dict(op.value)
        content = value.pop("content", None)
        role = value.pop("role", "user")
        body = orjson.dumps([list(op.namespace), op.key, op.value], option=orjson.OPT_SORT_KEYS)
        if isinstance(content, str) and content.strip():
            # The text is what the extractor reads; the rest of the value rides along.
            text, metadata = content, value
        else:
            text, metadata = orjson.dumps(op.value, option=orjson.OPT_SORT_KEYS).decode(), {}
        self.client.remember(
            self.project,
            subject,
            text,
            role=role,
            event_id="lg-" + hashlib.sha256(body).hexdigest()[:40],
            source="langgraph",
            metadata=metadata | {"langgraph_key": op.key},
        )

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order, one API call (or a few) each."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                raise NotImplementedError("the Memory Consolidator API lists no subjects")
            else:
                raise TypeError(f"unknown operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on a thread (the client blocks)."""
        return await asyncio.to_thread(self.batch, list(ops))
