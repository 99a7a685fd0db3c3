"""Running agent SQL safely on SQLite, DuckDB and PostgreSQL.

`database.py` is one database as the agent sees it (guarded queries, capped results, cached gold);
`query_check.py` the static check every query passes first; `drivers.py` read-only engines;
`watchdog.py` the time limit; `duckdb_pool.py` and `duckdb_worker.py` DuckDB queries in worker
processes, killed when one outlives its limit; `normalize.py` values made comparable across
drivers; `postgres.py` and `pg_server.py` a PostgreSQL server and its read-only role.
"""
