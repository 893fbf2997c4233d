"""Every supersession a kept bench schema holds, each with what the names guard says of it:
``python -m bench.memory.supersessions --schema bench_TAG``.

A memory bench run with ``--keep`` leaves its schema; this reads each superseded fact beside
its successor and asks ``processors.newer_value.about_different_things`` of the pair (the
guard ``newer_wins`` and the value judge's offer apply) and of ``about_other_entities``
(the check a model's own ``supersede`` gets). A pair the first calls different things was
not superseded by the rule: it came from the model's own ``supersede`` action or from a
person's command. Read-only; prints one line a pair and the totals.

Invariants: reads one schema of the database named by ``--database-url`` (default: the
settings' ``CONSOLIDATOR_DATABASE_URL``, else the local stack's server); writes nothing.
"""

from __future__ import annotations

import argparse
import re

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from processors.newer_value import about_different_things, about_other_entities
from schemas.settings import Settings

QUERY = """SELECT f.predicate, f.superseded_reason AS why, f.value AS old_value,
    f.statement AS old_statement, n.value AS new_value, n.statement AS new_statement
    FROM {schema}.facts f JOIN {schema}.facts n ON n.id = f.superseded_by
    WHERE f.status = 'superseded' ORDER BY f.valid_to, f.id"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--schema", required=True, help="bench_TAG of a kept run")
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args(argv)
    if not re.fullmatch(r"bench_[0-9a-f]{1,32}", args.schema):
        raise SystemExit(f"--schema {args.schema!r}: expected bench_ and a hex tag")
    url = args.database_url or Settings().resolved_database_url
    with psycopg.connect(url, row_factory=dict_row) as conn:
        rows = conn.execute(sql.SQL(QUERY).format(schema=sql.Identifier(args.schema))).fetchall()
    different = others = 0
    for r in rows:
        pair = (
            r["predicate"] or "",
            r["new_value"],
            r["new_statement"],
            r["old_value"],
            r["old_statement"],
        )
        apart, other = about_different_things(*pair), about_other_entities(*pair)
        different += apart
        others += other
        print(
            f"{r['predicate']}\t{r['why']}\tdifferent_things={apart}\tother_entities={other}\t"
            f"{r['old_statement']!r} -> {r['new_statement']!r}"
        )
    print(
        f"{len(rows)} supersessions, {different} between statements naming different things, "
        f"{others} of them with neither about the user (a model's supersede is held for those)"
    )


if __name__ == "__main__":
    main()
