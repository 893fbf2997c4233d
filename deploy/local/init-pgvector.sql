-- Run once by the postgres image on a fresh volume (docker-entrypoint-initdb.d).
CREATE EXTENSION IF NOT EXISTS vector;
