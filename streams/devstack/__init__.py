"""The local development stack (Kafka from Maven jars, embedded PostgreSQL); not needed
in a production image."""
