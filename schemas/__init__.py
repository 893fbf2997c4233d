"""Message and record shapes of the Memory Consolidator (the public contract).

Invariants: every model is frozen with ``extra="forbid"`` and carries a schema version;
topic names are defined once, in :mod:`schemas.topics`.
"""
