"""Test support: local stand-ins for external services (no network beyond 127.0.0.1)."""
