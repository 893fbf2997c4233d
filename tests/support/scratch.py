"""A run of its own on a shared stack: fresh schema, topic prefix and group; dropped after.

``fresh_settings(tag)`` creates the schema ``bench_TAG`` (with the vector extension) in the
configured database (by default the embedded server of ``consolidator up`` under
``<repo>/.stack``) and returns settings with that schema, the topic prefix ``benchTAG.``, the
group ``bench-TAG``, the hash embedder and a free HTTP port; ``drop`` deletes the topics and
the schema again.
"""

from __future__ import annotations

import contextlib
from typing import Any

from tests.support.kafka_io import delete_topics
from tests.support.net import free_port
from tests.support.workers import REPO


def fresh_settings(tag: str, **update: Any) -> Any:
    """Settings with its own topic prefix, group and schema on the shared local stack."""
    import psycopg
    from psycopg import sql as psql

    from schemas.settings import Settings
    from streams.store.core import database_url

    base = Settings(state_dir=REPO / ".stack")
    url = update.pop("database_url", None) or database_url(base)
    schema = f"bench_{tag}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(psql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(psql.Identifier(schema)))
    return base.model_copy(
        update={
            "database_url": url,
            "database_schema": schema,
            "topic_prefix": f"bench{tag}.",
            "group_id": f"bench-{tag}",
            "embedder": "hash",
            "http_port": free_port(),
            **update,
        }
    )


def drop(settings: Any) -> None:
    import psycopg
    from psycopg import sql as psql

    with contextlib.suppress(Exception):
        delete_topics(settings)
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        conn.execute(
            psql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                psql.Identifier(settings.database_schema)
            )
        )
