"""The write path: the ingest guard, the pipeline, the outbox relay, tracing."""
