"""Bookkeeping the write path keeps beside facts: commands applied, learned aliases, and
the poison-pill attempt records.

Invariants:
- A command is recorded once per (project, command id), in the transaction that applies or
  refuses it, so a redelivered command is a no-op.
- Aliases only grow; the latest decision on a (predicate, target) pair wins.
- An attempt record exists exactly while work on a message is unfinished: registered before
  the work starts, cleared when it ends applied, refused or dead-lettered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from processors.resolution import alias_maps
from schemas.aliases import PredicateAlias
from schemas.commands import Command
from schemas.facts import ConflictSet, Fact
from streams.store.base import Base
from streams.store.mapping import conflict_from_row, fact_from_row

# The newer active facts a resolution reads for a restating occupant: a bound, so a subject
# with a long history costs a command no more than this many rows; beyond it the winner is
# promoted as it was before.
NEWER_ACTIVE = 200


class Bookkeeping(Base):
    """Commands, aliases and ingest attempts."""

    async def command_applied(self, project: str, command_id: str) -> bool:
        """The command was applied or refused before."""
        cur = await self.conn.execute(
            "SELECT 1 FROM commands_applied WHERE project_id = %s AND command_id = %s",
            (project, command_id),
        )
        return await cur.fetchone() is not None

    async def command_outcome(self, project: str, command_id: str) -> str | None:
        """The recorded outcome of a command, or None."""
        cur = await self.conn.execute(
            "SELECT outcome FROM commands_applied WHERE project_id = %s AND command_id = %s",
            (project, command_id),
        )
        row = await cur.fetchone()
        return None if row is None else str(row["outcome"])

    async def record_command(
        self, command_id: str, project: str, subject: str, outcome: str
    ) -> None:
        """Record a command's outcome (the first record wins)."""
        await self.conn.execute(
            """INSERT INTO commands_applied (command_id, project_id, subject_id, outcome)
               VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING""",
            (command_id, project, subject, outcome[:1000]),
        )

    async def command_state(self, cmd: Command) -> tuple[dict[str, Fact], dict[str, ConflictSet]]:
        """What a command needs, and no more (a subject's whole history may be large): the
        facts it names, the conflict set it names and that set's members, the active fact of
        every predicate among them and of the set's, the newest ``NEWER_ACTIVE`` active facts
        that began after its oldest candidate (one may restate a winner's statement,
        ``commands_occupied.restated_by``), and the open value sets of those predicates with
        their listed contenders (a winner whose predicate was taken meanwhile joins one,
        ``processors.commands_occupied``); all within the command's (project, subject)."""
        scope = (cmd.project_id, cmd.subject_id)
        named = [i for i in (cmd.fact_id, cmd.choose_fact_id) if i]
        conflicts: dict[str, ConflictSet] = {}
        if cmd.conflict_set_id:
            cur = await self.conn.execute(
                """SELECT * FROM conflict_sets WHERE project_id = %s AND subject_id = %s
                   AND id = %s""",
                (*scope, cmd.conflict_set_id),
            )
            conflicts = {r["id"]: conflict_from_row(r) for r in await cur.fetchall()}
        cs = conflicts.get(cmd.conflict_set_id or "")
        cur = await self.conn.execute(
            """WITH own AS (SELECT * FROM facts WHERE project_id = %s AND subject_id = %s
                   AND (id = ANY(%s) OR conflict_set_id = %s))
               SELECT * FROM own UNION ALL
               SELECT * FROM facts WHERE project_id = %s AND subject_id = %s
                   AND status = 'active'
                   AND predicate IN (SELECT predicate FROM own UNION SELECT %s::text)
               UNION ALL
               (SELECT * FROM facts WHERE project_id = %s AND subject_id = %s
                   AND status = 'active' AND predicate IS NOT NULL
                   AND valid_from > (SELECT min(valid_from) FROM own
                                     WHERE status = 'candidate')
                   ORDER BY valid_from DESC, id LIMIT %s)""",
            (
                *scope,
                named + (list(cs.fact_ids) if cs else []),
                cs.id if cs else None,
                *scope,
                cs.predicate if cs else None,
                *scope,
                NEWER_ACTIVE,
            ),
        )
        facts = {r["id"]: fact_from_row(r) for r in await cur.fetchall()}
        if cs is not None:
            cur = await self.conn.execute(
                """SELECT * FROM conflict_sets WHERE project_id = %s AND subject_id = %s
                   AND status = 'open' AND reason = 'value' AND id <> %s
                   AND predicate = ANY(%s)""",
                (*scope, cs.id, sorted({f.predicate for f in facts.values() if f.predicate})),
            )
            waiting = {r["id"]: conflict_from_row(r) for r in await cur.fetchall()}
            conflicts |= waiting
            # Their listed contenders (a bounded window): an equal value reinforces one.
            listed = sorted({i for c in waiting.values() for i in c.fact_ids} - set(facts))
            if listed:
                cur = await self.conn.execute(
                    """SELECT * FROM facts WHERE project_id = %s AND subject_id = %s
                       AND id = ANY(%s)""",
                    (*scope, listed),
                )
                facts |= {r["id"]: fact_from_row(r) for r in await cur.fetchall()}
        return facts, conflicts

    async def aliases_for(
        self, predicates: Mapping[str, Iterable[str]]
    ) -> dict[str, tuple[dict[str, frozenset[str]], frozenset[frozenset[str]]]]:
        """Per project, the learned aliases that touch the given predicates (not all of a
        project's aliases: they only grow)."""
        pairs = [(p, pred) for p, preds in predicates.items() for pred in set(preds)]
        if not pairs:
            return {}
        cur = await self.conn.execute(
            """SELECT a.project_id, a.predicate, a.target, a.kind FROM predicate_aliases a
               JOIN unnest(%s::text[], %s::text[]) AS q(project_id, predicate)
               ON a.project_id = q.project_id
               AND (a.predicate = q.predicate OR a.target = q.predicate)""",
            ([p for p, _ in pairs], [q for _, q in pairs]),
        )
        rows: dict[str, list[tuple[str, str, str]]] = {}
        for r in await cur.fetchall():
            rows.setdefault(r["project_id"], []).append((r["predicate"], r["target"], r["kind"]))
        return {project: alias_maps(found) for project, found in rows.items()}

    async def record_aliases(self, aliases: Sequence[PredicateAlias]) -> None:
        """Write what resolutions taught (the latest decision on a pair wins)."""
        if not aliases:
            return
        async with self.conn.cursor() as cur:
            await cur.executemany(
                """INSERT INTO predicate_aliases (project_id, predicate, target, kind,
                   conflict_set_id, command_id, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (project_id, predicate, target) DO UPDATE SET kind = EXCLUDED.kind,
                   conflict_set_id = EXCLUDED.conflict_set_id,
                   command_id = EXCLUDED.command_id, created_at = EXCLUDED.created_at""",
                [
                    (
                        a.project_id,
                        a.predicate,
                        a.target,
                        a.kind,
                        a.conflict_set_id,
                        a.command_id,
                        a.created_at,
                    )
                    for a in aliases
                ],
            )

    # Poison-pill bookkeeping (streams.consolidation.guard).

    async def register_attempts(
        self, consumer: str, coords: Sequence[tuple[str, int, int]]
    ) -> set[tuple[str, int, int]]:
        """Record that work starts on these messages; returns those already recorded (their
        previous work never finished: the process holding them died)."""
        if not coords:
            return set()
        arrays = ([c[0] for c in coords], [c[1] for c in coords], [c[2] for c in coords])
        # Only the messages that were already recorded come back (none, usually).
        cur = await self.conn.execute(
            """WITH fresh AS (
                   INSERT INTO ingest_attempts (consumer, topic, part, msg_offset)
                   SELECT %s, * FROM unnest(%s::text[], %s::int[], %s::bigint[])
                   ON CONFLICT DO NOTHING RETURNING topic, part, msg_offset)
               SELECT b.topic, b.part, b.msg_offset
               FROM unnest(%s::text[], %s::int[], %s::bigint[]) AS b(topic, part, msg_offset)
               WHERE (b.topic, b.part, b.msg_offset) NOT IN (SELECT * FROM fresh)""",
            (consumer, *arrays, *arrays),
        )
        return {(r["topic"], r["part"], r["msg_offset"]) for r in await cur.fetchall()}

    async def bump_attempt(self, consumer: str, coord: tuple[str, int, int]) -> int:
        """Count one more start of work on a message; returns the starts recorded so far."""
        cur = await self.conn.execute(
            """INSERT INTO ingest_attempts (consumer, topic, part, msg_offset)
               VALUES (%s, %s, %s, %s) ON CONFLICT (consumer, topic, part, msg_offset)
               DO UPDATE SET attempts = ingest_attempts.attempts + 1, last_at = now()
               RETURNING attempts""",
            (consumer, *coord),
        )
        row = await cur.fetchone()
        return int(row["attempts"]) if row else 1

    async def clear_attempts(self, consumer: str, coords: Sequence[tuple[str, int, int]]) -> None:
        """The messages' work ended (applied, refused or dead-lettered)."""
        if not coords:
            return
        await self.conn.execute(
            """DELETE FROM ingest_attempts WHERE consumer = %s AND (topic, part, msg_offset) IN
               (SELECT * FROM unnest(%s::text[], %s::int[], %s::bigint[]))""",
            (consumer, [c[0] for c in coords], [c[1] for c in coords], [c[2] for c in coords]),
        )
