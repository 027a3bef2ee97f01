"""A throwaway PostgreSQL for django-tasks-db, when `initdb` is on PATH (or the URL is given).

THREADMILL_BENCH_POSTGRES_URL names an existing server instead (its database is dropped and
created again for each run). The throwaway cluster runs as the `postgres` user when the harness
is root (initdb refuses root), listens on a free port on 127.0.0.1, and commits without waiting
for the WAL flush (synchronous_commit=off), as Redis here runs without an fsync per write.
"""

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.servers.redis_server import free_port

URL_ENV = "THREADMILL_BENCH_POSTGRES_URL"


def as_server_user(argv: list[str]) -> list[str]:
    """Run ``argv`` as the postgres user when we are root."""
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def postgres_missing() -> str | None:
    """Why no PostgreSQL can be had here, or None."""
    if os.environ.get(URL_ENV):
        return None
    if shutil.which("initdb") is None or shutil.which("pg_ctl") is None:
        return f"no PostgreSQL: set {URL_ENV} or put initdb and pg_ctl on PATH"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root, and there is no postgres user to run initdb as"
    return None


@contextmanager
def postgres_url() -> Iterator[str]:
    """Yield THREADMILL_BENCH_POSTGRES_URL, else the URL of a throwaway cluster."""
    if url := os.environ.get(URL_ENV):
        yield url
        return
    with tempfile.TemporaryDirectory(prefix="threadmill-pg-") as directory:
        data = Path(directory) / "data"
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(directory, user.pw_uid, user.pw_gid)
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": True}
        initdb = ["initdb", "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"]
        subprocess.run(as_server_user(initdb), **quiet)
        port = free_port()
        options = (
            f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c synchronous_commit=off"
        )
        start = ["pg_ctl", "-D", str(data), "-o", options, "-w", "-l", f"{directory}/log", "start"]
        subprocess.run(as_server_user(start), **quiet)
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            stop = ["pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop"]
            subprocess.run(as_server_user(stop), **quiet)
