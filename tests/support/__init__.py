"""Test support: local stand-ins for external services (no network beyond 127.0.0.1).

Also the harness the benchmarks build on (worker processes, the workload, Kafka and SQL
helpers, the metrics parser, the fault run): bench/ imports from here, never the reverse
(an import-linter contract in pyproject.toml).
"""
