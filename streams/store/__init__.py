"""PostgreSQL: every SQL statement of the service and the row <-> model mapping."""
