"""LLM adapters: the OpenAI-compatible client, the extractors and the judges."""
