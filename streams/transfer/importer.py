"""``consolidator import``: load an export file (``schemas/transfer.py``) into this deployment.

Three passes over the file; at most one line (``MAX_LINE_BYTES``) and one batch are held:
1. **check** (no database): every line parsed and checked (``processors.transfer.Checker``).
   Any problem, a header of another ``schema_version`` or no header refuses the whole file:
   nothing is written, and the first problems are reported with their line numbers.
2. **plan** (reads only): each batch is compared with the target. A record whose id belongs
   to another project there, an active fact whose attribute already has another active fact,
   or an open conflict set whose key already has another open set refuses the whole file,
   nothing written. ``--dry-run`` stops here and reports what the write would do.
3. **write**: each batch in one transaction, under the subject advisory locks the workers
   take (a live worker's writes to those subjects wait), compared again under the locks.

Invariants:
- Insert only, never an update: a record whose key the target already holds is kept as the
  target holds it (counted ``present`` when identical, ``differing`` otherwise). So an import
  is idempotent: the same file again writes nothing and queues no change event.
- Every fact and conflict set written queues its change events in the outbox in the same
  transaction (``processors.transfer_out``; cause ``import:<header hash>``, deterministic ids);
  aliases, erasure records and provenance queue none (nor does a conflict set none of whose
  listed facts the target holds: its event would have no fact to carry). The command then
  drains the outbox through the relay; what the broker does not take, any worker's relay
  publishes later.
- Facts keep their ids (uuid5 of the origin's project, subject and event), timestamps,
  status, pin and provenance; their embeddings are computed again by this deployment's
  embedder (a vector of another model would be meaningless here).
- A failure in the write pass (a database error, or a row a concurrent writer created
  since the plan) rolls back that batch only: the batches before it stay, and running the
  same import again completes it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from processors.normalize import embedding_text
from processors.transfer import Checker, LineError, read_header, read_record
from processors.transfer_out import conflict_message, fact_messages, transfer_cause
from schemas.facts import Fact
from schemas.transfer import MAX_LINE_BYTES, Header, ImportReport, KindReport, Record
from streams.store import transfer as q
from streams.store.core import Store

BATCH = 500
SOURCE_BATCH_IDS = 10_000
MAX_DIFFERING_IDS = 16
MAX_PROBLEMS = 20  # kept with their reasons (all are counted)
SHOWN_PROBLEMS = 5  # in the one-line error


class ImportRefused(ValueError):
    """The file or the target refuses the import; nothing was written. The message names
    the first problems (with their line numbers) and how many there are in all."""

    def __init__(self, problems: list[str], total: int | None = None):
        self.problems = problems
        total = len(problems) if total is None else total
        shown = "; ".join(problems[:SHOWN_PROBLEMS])
        more = total - min(len(problems), SHOWN_PROBLEMS)
        super().__init__(shown + (f" (+{more} more problems)" if more > 0 else ""))


class ImportFailed(RuntimeError):
    """The write pass stopped at one batch; the batches before it stay imported."""


def lines(path: Path) -> Iterator[tuple[int, bytes | None, int]]:
    """(line number, bytes or None when longer than MAX_LINE_BYTES, bytes read so far)."""
    with open(path, "rb") as f:
        number = 0
        while raw := f.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw.rstrip(b"\r\n")) > MAX_LINE_BYTES:
                while raw and not raw.endswith(b"\n"):  # skip the rest of the long line
                    raw = f.readline(1 << 20)
                yield number, None, f.tell()
                continue
            yield number, raw, f.tell()


def check(path: Path, on_bytes: Callable[[int], None] = lambda n: None) -> Checker:
    """Pass 1; ImportRefused listing the problems when there are any."""
    checker = Checker()
    for number, raw, done in lines(path):
        on_bytes(done)
        if raw is None:
            if checker.header is None:
                raise ImportRefused([f"line {number}: longer than {MAX_LINE_BYTES} bytes"])
            checker.fail(number, f"longer than {MAX_LINE_BYTES} bytes")
            continue
        try:
            checker.feed(number, raw)
        except LineError as exc:  # the header: nothing after it can be read
            raise ImportRefused([str(exc)]) from None
    if checker.finish():
        raise ImportRefused(checker.problems, checker.problem_count)
    return checker


Batch = list[tuple[int, Any]]


def batches(path: Path) -> Iterator[tuple[str, Batch]]:
    """The records of a checked file, as runs of one kind, at most BATCH records (or about
    SOURCE_BATCH_IDS source ids) each."""
    header: Header | None = None
    kind, ids = "", 0
    batch: Batch = []
    for number, raw, _done in lines(path):
        if raw is None or not raw.strip():
            continue
        if header is None:
            header = read_header(raw, number)
            continue
        record: Record = read_record(raw, number, header)
        size = len(record.event_ids) if record.kind == "source" else 1
        if batch and (record.kind != kind or len(batch) >= BATCH or ids + size > SOURCE_BATCH_IDS):
            yield kind, batch
            batch, ids = [], 0
        kind = record.kind
        batch.append((number, record))
        ids += size
    if batch:
        yield kind, batch


class Importer:
    """Imports one export file into one project, batch by batch."""

    def __init__(self, store: Store, header: Header, embedder: Any | None):
        self.store = store
        self.header = header
        self.project = header.project_id
        self.embedder = embedder
        self.cause = transfer_cause(header)
        self.now = datetime.now(UTC)
        self.tally = {k: dict.fromkeys(KindReport.model_fields, 0) for k in q.KINDS}
        self.differing: list[str] = []
        self.problems: list[str] = []
        self.problem_count = 0
        self.events = 0

    def _problem(self, number: int, reason: str) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"line {number}: {reason}")

    def _differ(self, kind: str, key: str) -> None:
        self.tally[kind]["differing"] += 1
        if len(self.differing) < MAX_DIFFERING_IDS:
            self.differing.append(key)

    async def run(self, path: Path, write: bool, on_line: Callable[[int], None]) -> None:
        """Pass 2 (``write`` False: plan) or 3 (write) over the checked file."""
        for kind, batch in batches(path):
            if write:
                await self._write(kind, batch)
            else:
                await self._apply(kind, batch, write=False)
            on_line(len(batch))
        if self.problems:
            raise ImportRefused(self.problems, self.problem_count)

    async def _write(self, kind: str, batch: Batch) -> None:
        keys = q.subject_keys(kind, batch)
        vectors = await self._embed_absent(batch) if kind == "fact" else {}
        try:
            async with self.store.batch(keys):
                await self._apply(kind, batch, write=True, vectors=vectors)
                if self.problems:
                    raise ImportFailed(self.problems[0])
        except ImportFailed as exc:
            raise ImportFailed(f"{exc}; {_resume(batch)}") from None
        except Exception as exc:
            raise ImportFailed(f"{type(exc).__name__}: {exc}; {_resume(batch)}") from exc

    async def _embed_absent(self, batch: Batch) -> dict[str, Any]:
        found = await q.existing_facts(self.store.conn, [r.fact.id for _n, r in batch])
        return self._embed([r.fact for _n, r in batch if r.fact.id not in found])

    def _embed(self, facts: list[Fact]) -> dict[str, Any]:
        if not facts or self.embedder is None:
            return {}
        texts = [embedding_text(f.predicate, f.value, f.statement) for f in facts]
        return dict(zip((f.id for f in facts), self.embedder.embed(texts), strict=True))

    async def _apply(
        self, kind: str, batch: Batch, write: bool, vectors: dict[str, Any] | None = None
    ) -> None:
        conn, tally = self.store.conn, self.tally[kind]
        if kind == "source":
            pairs = [(r.fact_id, e) for _n, r in batch for e in r.event_ids]
            present, skipped = await q.source_state(conn, self.project, pairs)
            tally["present"] += present
            # Planned, a source of a fact still to be written counts as created.
            tally["skipped"] += skipped if write else 0
            if write:
                tally["created"] += await q.insert_sources(conn, self.project, pairs)
            else:
                tally["created"] += len(pairs) - present
            return
        existing = await q.existing(conn, kind, self.project, batch)
        absent: Batch = []
        first: dict[str, int] = {}
        for number, record in batch:
            key, item = q.key_of(record), q.item_of(record)
            old = existing.get(key)
            if key in first:  # a hand-made file: the same record twice
                self._problem(number, f"{kind} {key} again (first on line {first[key]})")
                continue
            first[key] = number
            if old is None:
                absent.append((number, record))
            elif q.project_of(old) != self.project:
                self._problem(number, f"{kind} {key} belongs to project {q.project_of(old)!r} here")
            elif q.same(old, item):
                tally["present"] += 1
            else:
                self._differ(kind, key)
        for number, reason in q.twins(kind, absent) + await q.collisions(
            conn, kind, self.project, absent
        ):
            self._problem(number, reason)
        tally["created"] += len(absent)
        if write and absent and not self.problems:
            await self._insert(kind, absent, vectors or {})

    async def _insert(self, kind: str, absent: Batch, vectors: dict[str, Any]) -> None:
        conn, items = self.store.conn, [q.item_of(r) for _n, r in absent]
        if kind == "fact":
            missing = [f for f in items if f.id not in vectors]  # raced in since the embed
            vectors = {**vectors, **self._embed(missing)}
            await q.insert_facts(conn, items, vectors)
            messages = [m for f in items for m in fact_messages(f, self.cause, self.now)]
        elif kind == "conflict_set":
            await q.insert_conflicts(conn, items)
            members = await q.member_facts(conn, self.project, items)
            messages = [
                conflict_message(cs, members[cs.id], self.cause, self.now)
                for cs in items
                if cs.id in members
            ]
        else:
            await q.insert_plain(conn, kind, items)
            messages = []
        await self.store.enqueue(messages)
        self.events += len(messages)

    def report(self, dry_run: bool, published: int = 0) -> ImportReport:
        """What the import did, so far."""
        kinds = {q.REPORT_FIELD[k]: KindReport(**v) for k, v in self.tally.items()}
        return ImportReport(
            project_id=self.project,
            dry_run=dry_run,
            cause=self.cause,
            change_events=self.events,
            published=published,
            differing_ids=tuple(self.differing),
            **kinds,
        )


def _resume(batch: Batch) -> str:
    return (
        f"lines {batch[0][0]}-{batch[-1][0]} were not imported, the lines before them were: "
        "run the same import again to finish it (after fixing the cause)"
    )


async def import_file(
    store: Store,
    path: Path,
    header: Header,
    embedder: Any | None,
    dry_run: bool = False,
    progress: Callable[[str], Any] | None = None,
) -> Importer:
    """Passes 2 and 3 over a checked file (pass 3 unless ``dry_run``); the importer of the
    last pass run holds the counts. The target's schema is applied first. ``progress(name)``
    makes a context manager with ``update(n)`` (a bar) for each pass."""
    await store.migrate()
    bar = progress or (lambda _name: contextlib.nullcontext(_Quiet()))
    plan = Importer(store, header, None)
    with bar("plan") as shown:
        await plan.run(path, write=False, on_line=shown.update)
    if dry_run:
        return plan
    doer = Importer(store, header, embedder)
    with bar("import") as shown:
        await doer.run(path, write=True, on_line=shown.update)
    return doer


class _Quiet:
    def update(self, n: int) -> None:
        pass
