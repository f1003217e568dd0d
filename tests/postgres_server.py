"""A throw-away PostgreSQL server for the tests: Debian's ``postgresql`` binaries, a fresh cluster in /tmp.

``make test`` (and so .ci/run) installs the ``postgresql`` package when it is missing; the server runs as
the ``postgres`` user when the tests run as root (PostgreSQL refuses root), listens on 127.0.0.1 at a free
port, asks for a password (scram-sha-256), and is removed when the session ends.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PgServer", "pg_bindir", "postgres_server"]


@dataclass(frozen=True)
class PgServer:
    host: str
    port: int
    user: str
    password: str
    database: str

    def url(self, *, password: bool = True) -> str:
        auth = f"{self.user}:{self.password}" if password else self.user
        return f"postgresql://{auth}@{self.host}:{self.port}/{self.database}"


def pg_bindir() -> Path | None:
    """Where initdb and postgres are (Debian puts them under /usr/lib/postgresql/<version>/bin), or None."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(candidates[-1]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def postgres_server(bindir: Path) -> Iterator[PgServer]:
    """A running server with one database, ``audits``, owned by ``steward`` (password auth)."""
    root = Path(tempfile.mkdtemp(prefix="audit-pg-"))
    user: dict[str, str] = {}
    if os.geteuid() == 0:  # PostgreSQL will not run as root: hand the folder to the postgres user
        shutil.chown(root, "postgres", "postgres")
        user = {"user": "postgres", "group": "postgres"}
    server = PgServer("127.0.0.1", _free_port(), "steward", "s3cret-Pw.9", "audits")
    pwfile = root / "pw"
    pwfile.write_text(server.password + "\n")
    if user:
        shutil.chown(pwfile, "postgres")
    data = root / "data"
    subprocess.run([str(bindir / "initdb"), "-D", str(data), "-U", server.user, f"--pwfile={pwfile}",
                    "-A", "scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"],
                   check=True, capture_output=True, **user)  # fmt: skip
    proc = subprocess.Popen([str(bindir / "postgres"), "-D", str(data), "-p", str(server.port), "-h",
                             server.host, "-k", str(root), "-c", "fsync=off"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **user)  # fmt: skip
    try:
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(host=server.host, port=server.port, user=server.user, password=server.password,
                                     dbname="postgres", autocommit=True) as conn:  # fmt: skip
                    conn.execute(f"CREATE DATABASE {server.database}")
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.2)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(root, ignore_errors=True)
