"""Building the bundled datasets on a PostgreSQL server, and the read-only role agents query as.

Given an administrator's URL, `ensure_postgres_database(name, url)` makes database `gfcr_<name>`
(UTF-8, C collation so text sorts as in SQLite and DuckDB), loads the dataset, and records the
build key as the database's comment; a database whose comment differs is dropped and rebuilt.
Agents connect as `gfcr_reader`: a login role that may only SELECT the gfcr tables, whose
sessions default to read-only transactions, and that is no superuser — so `COPY … PROGRAM`,
server file functions, large objects and extensions (dblink) are out of its reach. Its password
is derived from the administrator's URL, so every process computes the same one.
"""

from __future__ import annotations

import hashlib
import logging

import sqlalchemy as sa

from gfcr.envs.sql.data.build import DATASETS, build_key, write_dataset
from gfcr.errors import ConfigError, needs_extra

logger = logging.getLogger(__name__)
READER_ROLE = "gfcr_reader"
_LOCK_KEY = 0x6766_6372  # "gfcr": the advisory lock that serialises builds across processes


def database_name(name: str) -> str:
    return f"gfcr_{name}"


def ensure_postgres_database(name: str, admin_url: str | sa.URL) -> sa.URL:
    """Build dataset `name` on the server at `admin_url` if needed; returns the reader's URL for it."""
    admin_url = sa.make_url(admin_url).set(drivername="postgresql+psycopg")
    key = build_key(name)
    target = database_name(name)
    with needs_extra("the PostgreSQL engine"):  # sqlalchemy imports psycopg here
        admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    try:
        with admin.connect() as connection:
            connection.exec_driver_sql(f"SELECT pg_advisory_lock({_LOCK_KEY})")
            try:
                password = reader_password(admin_url)
                _ensure_reader_role(connection, password)
                comment = connection.exec_driver_sql(
                    "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %(name)s",
                    {"name": target},
                ).scalar()
                if comment != f"gfcr build {key}":
                    _rebuild(connection, admin_url, name, target, key)
            finally:
                connection.exec_driver_sql(f"SELECT pg_advisory_unlock({_LOCK_KEY})")
    except sa.exc.OperationalError as e:
        raise ConfigError(
            f"cannot reach PostgreSQL at {admin_url.render_as_string()}: {e.orig}; start a server "
            "(e.g. gfcr.envs.sql.TemporaryPostgres) and pass its URL as engine="
        ) from e
    finally:
        admin.dispose()
    return admin_url.set(username=READER_ROLE, password=password, database=target)


def reader_password(admin_url: sa.URL) -> str:
    """The reader role's password: derived from the administrator's URL (same in every process)."""
    secret = admin_url.render_as_string(hide_password=False)
    return hashlib.sha256(f"gfcr-reader\n{secret}".encode()).hexdigest()[:32]


def _ensure_reader_role(connection: sa.Connection, password: str) -> None:
    exists = connection.exec_driver_sql(
        "SELECT 1 FROM pg_roles WHERE rolname = %(r)s", {"r": READER_ROLE}
    ).scalar()
    verb = "ALTER" if exists else "CREATE"
    connection.exec_driver_sql(
        f"{verb} ROLE {READER_ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION "
        f"CONNECTION LIMIT 256 PASSWORD '{password}'"
    )
    for setting in (
        "default_transaction_read_only = on",
        "statement_timeout = '60s'",
        "temp_file_limit = '1GB'",
    ):
        try:
            connection.exec_driver_sql(f"ALTER ROLE {READER_ROLE} SET {setting}")
        except sa.exc.DBAPIError:  # temp_file_limit needs a superuser; the rest hold without it
            logger.info("could not set %s for %s", setting, READER_ROLE)


def _rebuild(connection: sa.Connection, admin_url: sa.URL, name: str, target: str, key: str) -> None:
    logger.info("building %s on PostgreSQL", target)
    connection.exec_driver_sql(f"DROP DATABASE IF EXISTS {target} WITH (FORCE)")
    connection.exec_driver_sql(
        f"CREATE DATABASE {target} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'"
    )
    engine = sa.create_engine(admin_url.set(database=target), poolclass=sa.pool.NullPool)
    try:
        write_dataset(engine, DATASETS[name]())
        with engine.connect() as db:
            for statement in (
                "REVOKE ALL ON SCHEMA public FROM PUBLIC",
                f"GRANT USAGE ON SCHEMA public TO {READER_ROLE}",
                f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {READER_ROLE}",
            ):
                db.exec_driver_sql(statement)
            db.commit()
            _revoke_session_functions(db)
    finally:
        engine.dispose()
    connection.exec_driver_sql(f"REVOKE ALL ON DATABASE {target} FROM PUBLIC")  # no TEMP tables, no strangers
    connection.exec_driver_sql(f"GRANT CONNECT ON DATABASE {target} TO {READER_ROLE}")
    connection.exec_driver_sql(f"COMMENT ON DATABASE {target} IS 'gfcr build {key}'")


# Functions every role may run that reach beyond the query: change settings, signal other
# sessions (a reader could end other agents' connections), hold locks past the transaction.
_SESSION_FUNCTIONS = (
    "set_config", "pg_terminate_backend", "pg_cancel_backend", "pg_advisory_lock", "pg_advisory_lock_shared",
    "pg_try_advisory_lock", "pg_try_advisory_lock_shared", "pg_advisory_unlock", "pg_advisory_unlock_shared",
    "pg_advisory_unlock_all", "pg_notify",
)  # fmt: skip


def _revoke_session_functions(db: sa.Connection) -> None:
    """Take EXECUTE on `_SESSION_FUNCTIONS` from PUBLIC in this database (needs a superuser; else logged)."""
    signatures = (
        db.exec_driver_sql(
            "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE n.nspname = 'pg_catalog' AND p.proname = ANY(%(names)s)",
            {"names": list(_SESSION_FUNCTIONS)},
        )
        .scalars()
        .all()
    )
    try:
        for signature in signatures:
            db.exec_driver_sql(f"REVOKE EXECUTE ON FUNCTION {signature} FROM PUBLIC")
        db.commit()
    except sa.exc.DBAPIError:
        db.rollback()
        logger.warning(
            "could not revoke session functions from PUBLIC (not a superuser); "
            "the static check still refuses them"
        )
