"""The rows of the attribute-pair datasets, in modules of at most 300 lines: the labelled pairs
of ``processors.attribute_pairs`` (``same_*``, ``different_*``, split by group, in the order
of ``GROUPS``) and the blind holdout of ``processors.attribute_pairs_blind`` (``blind_*``).

Invariants: data only, no I/O and no logic; each module's ``ROWS`` is a slice of one list,
and the two public modules join the slices in file-number order, so the joined lists are
exactly the lists as they were written in one file. Read them through those two modules.
"""
