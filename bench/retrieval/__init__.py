"""Retrieval quality and latency of ``/v1/context``: LoCoMo evidence recall per mode
(``python -m bench.retrieval``) and the context latency of a large subject
(``python -m bench.retrieval.latency``). See bench/README.md."""
