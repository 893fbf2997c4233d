"""Pure domain logic: ``(event, state snapshot, policy) -> decision``.

Invariants: no I/O, no clock (``now`` is a parameter), no randomness (ids are uuid5 of
stable inputs), so replaying an event reproduces its decision. Imports only ``schemas``,
pydantic, the standard library and numpy.
"""
