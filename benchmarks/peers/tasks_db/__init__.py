"""django-tasks-db: DatabaseBackend on SQLite (WAL) and on PostgreSQL, `manage.py db_worker`."""

import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from urllib.parse import urlsplit, urlunsplit

from ...harness.postgres_server import postgres_missing
from ..base import Peer, RunContext, WorkerSpec

DB_NAME = "tasks_db.sqlite3"
PG_DATABASE = "bench_tasks"  # dropped and created again before every run
COUNT_SUCCESSFUL = "SELECT COUNT(*) FROM django_tasks_database_dbtaskresult WHERE status = %s"


class TasksDbPeer(Peer):
    name = "tasks_db"
    label = "django-tasks-db (SQLite)"
    distribution = "django-tasks-db"
    module = "django_tasks_db"
    max_threads = 1
    read_ahead = "none (one row per claim, as shipped)"
    slow = True

    def env(self, context: RunContext) -> dict[str, str]:
        return {
            **super().env(context),
            "DJANGO_SETTINGS_MODULE": "benchmarks.peers.tasks_db.settings",
        }

    def prepare(self, context: RunContext) -> None:
        subprocess.run(
            self.python("-m", "django", "migrate", "--verbosity", "0"),
            env=self.process_env(context),
            check=True,
        )

    def worker_argv(self, spec: WorkerSpec) -> list[str]:
        # --interval bounds its idle poll; the queue is full when it starts, so it never idles.
        return self.python(
            "-m", "django", "db_worker", "--batch", "--no-startup-delay", "--interval", "0.1"
        )

    @contextmanager
    def counter(self, context: RunContext) -> Iterator[Callable[[], int]]:
        query = COUNT_SUCCESSFUL.replace("%s", "?")
        connection = sqlite3.connect(context.workdir / DB_NAME, timeout=10)
        try:
            yield lambda: int(connection.execute(query, ("SUCCESSFUL",)).fetchone()[0])
        finally:
            connection.close()


def bench_database_url(server_url: str) -> str:
    """The URL of the benchmark's own database on ``server_url``."""
    parts = urlsplit(server_url)
    return urlunsplit(parts._replace(path=f"/{PG_DATABASE}"))


class TasksDbPostgresPeer(TasksDbPeer):
    name = "tasks_db_pg"
    label = "django-tasks-db (PostgreSQL)"
    needs_postgres = True

    @property
    def package(self) -> str:
        return "tasks_db"

    def missing(self) -> str | None:
        if find_spec("psycopg") is None:
            return "psycopg is not installed: pip install -e '.[bench]'"
        return postgres_missing() or super().missing()

    def env(self, context: RunContext) -> dict[str, str]:
        assert context.database_url, "the harness gives a PostgreSQL peer a database_url"
        return {
            **super().env(context),
            "BENCH_DATABASE_URL": bench_database_url(context.database_url),
        }

    def prepare(self, context: RunContext) -> None:
        import psycopg

        assert context.database_url, "the harness gives a PostgreSQL peer a database_url"
        with psycopg.connect(context.database_url, autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)")
            connection.execute(f"CREATE DATABASE {PG_DATABASE}")
        super().prepare(context)

    @contextmanager
    def counter(self, context: RunContext) -> Iterator[Callable[[], int]]:
        import psycopg

        assert context.database_url, "the harness gives a PostgreSQL peer a database_url"
        url = bench_database_url(context.database_url)
        with psycopg.connect(url, autocommit=True) as connection:

            def count() -> int:
                row = connection.execute(COUNT_SUCCESSFUL, ("SUCCESSFUL",)).fetchone()
                return int(row[0]) if row else 0

            yield count
