"""The command line (``consolidator``)."""
