"""django-tasks-db: DatabaseBackend on SQLite (WAL), `manage.py db_worker`."""

import sqlite3
import subprocess
from collections.abc import Callable

from ..base import Peer, RunContext, WorkerSpec

DB_NAME = "tasks_db.sqlite3"


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

    def counter(self, context: RunContext) -> Callable[[], int]:
        connection = sqlite3.connect(context.workdir / DB_NAME, timeout=10)
        query = "SELECT COUNT(*) FROM django_tasks_database_dbtaskresult WHERE status = ?"

        def count() -> int:
            return int(connection.execute(query, ("SUCCESSFUL",)).fetchone()[0])

        return count
