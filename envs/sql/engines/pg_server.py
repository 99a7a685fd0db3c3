"""`TemporaryPostgres`: a throwaway PostgreSQL server from the installed binaries, for tests and demos.

It runs `initdb` and `pg_ctl` from Debian's `postgresql` package (`/usr/lib/postgresql/N/bin`, or
`$GFCR_PG_BINDIR`, or the PATH) in a private directory, listening only on a Unix socket there, so
it needs no free port and disturbs no other server. PostgreSQL refuses to run as root: as root
the server runs as the `postgres` user (created by the Debian package), via `runuser`.
"""

from __future__ import annotations

import glob
import logging
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

from gfcr.errors import ConfigError

logger = logging.getLogger(__name__)
_SERVER_OPTIONS = "-c listen_addresses='' -c fsync=off -c full_page_writes=off -c synchronous_commit=off"


def find_bindir() -> Path:
    """The directory holding `initdb` and `pg_ctl` (newest Debian version first)."""
    candidates = [os.environ.get("GFCR_PG_BINDIR", "")]
    candidates += sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True
    )
    candidates += [str(Path(found).parent) for found in [shutil.which("initdb")] if found]
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    raise ConfigError(
        "cannot find PostgreSQL's initdb and pg_ctl; install the server "
        "(Debian: `apt-get install -y postgresql`, "
        "or `make setup` as root) or set GFCR_PG_BINDIR to its bin directory"
    )


class TemporaryPostgres:
    """A private PostgreSQL server that lives as long as this object (or its `with` block).

    `url` is a SQLAlchemy URL for its superuser `postgres` (trust authentication, socket only):
    pass it as `engine=` to `gfcr/SQL-v0`, or to `gfcr.envs.sql.execution_match` after a build.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        self.bindir = find_bindir()
        self._owned = directory is None
        self.directory = Path(directory or tempfile.mkdtemp(prefix="gfcr-pg-"))
        self.data = self.directory / "data"
        self.running = False

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@/postgres?host={self.directory}"

    def start(self) -> str:
        """Initialise the cluster (first time) and start the server; returns `url`."""
        user = self._run_as()
        if user is not None:
            os.chown(self.directory, user.pw_uid, user.pw_gid)
        if not (self.data / "PG_VERSION").exists():
            self._run(
                "initdb",
                "-D",
                str(self.data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "-N",
            )
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.directory / "server.log"), "-w", "-t", "60",
            "-o", f"-k {self.directory} {_SERVER_OPTIONS}", "start",
        )  # fmt: skip
        self.running = True
        logger.info("started a temporary PostgreSQL server in %s", self.directory)
        return self.url

    def stop(self) -> None:
        """Stop the server and, if this object made its directory, delete it."""
        if self.running:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
            self.running = False
        if self._owned:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> TemporaryPostgres:
        self.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bindir / program), *args]
        if (user := self._run_as()) is not None:
            command = ["runuser", "-u", user.pw_name, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            log = self.directory / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise ConfigError(
                f"{program} failed ({result.returncode}): {result.stderr.strip()}\n{tail}".strip()
            )

    @staticmethod
    def _run_as() -> pwd.struct_passwd | None:
        """The user to run the server as: `postgres` when we are root, else ourselves (None)."""
        if os.geteuid() != 0:
            return None
        try:
            return pwd.getpwnam("postgres")
        except KeyError as e:
            raise ConfigError(
                "PostgreSQL cannot run as root and there is no 'postgres' user; run as another user"
            ) from e
