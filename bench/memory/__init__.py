"""Public memory benchmarks end to end through the product (``python -m bench.memory.<name>``):
FactConsolidation and Letta's core-memory update; the runner is ``bench.memory.runner``."""
