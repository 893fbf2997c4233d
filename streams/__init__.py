"""Kafka wiring and I/O adapters: faust agents, the confluent-kafka SDK, the PostgreSQL store,
the embedder and extractor adapters, the local stack and the CLI.

Invariants: all I/O of the service lives here; the decisions it applies come from
``processors`` (pure), the shapes it moves from ``schemas``.
"""
