"""The worker's HTTP surface."""
