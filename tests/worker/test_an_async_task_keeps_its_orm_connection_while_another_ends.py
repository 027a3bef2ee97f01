"""Async tasks share one connection, in asgiref's one ORM thread (docs/worker.md, The ORM from
async tasks): one that ends must not close it under another still using it.

``aiterator()`` fetches its rows chunk by chunk, each chunk a call of its own in that thread,
from one cursor: with ``CONN_MAX_AGE`` 0 (the default), the close after any other async task
ended closed the connection between two chunks, and the iterating task failed with "Cannot
operate on a closed database" (PostgreSQL: "the connection is closed"). The connection is
closed once no async task runs; while some do, only a broken one is dropped.
"""

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

from django.contrib.contenttypes.models import ContentType

from django_threadmill.compat import TaskResultStatus, task
from tests.support import Command, running, wait_until
from tests.worker.test_thread_connection_closed_after_task import open_files

MODELS = ["first", "second", "third"]


@task
async def iterates_in_chunks(started: str, release: str) -> list[str]:
    """Iterate the rows one chunk (one ORM call) at a time; after the first, say so and wait
    for ``release`` (polled on the loop, which runs the other tasks meanwhile)."""
    seen = []
    async for content_type in ContentType.objects.order_by("pk").aiterator(chunk_size=1):
        seen.append(content_type.model)
        if len(seen) == 1:
            Path(started).touch()
            while not Path(release).exists():
                await asyncio.sleep(0.01)
    return seen


@task
async def counts_rows() -> int:
    return await ContentType.objects.acount()


def database_with_rows(tmp_path: Path) -> Path:
    """Make a database file of the test's own, with the one table the tasks read."""
    database = tmp_path / "db.sqlite3"
    with sqlite3.connect(database) as made:
        made.execute(
            "CREATE TABLE django_content_type (id integer PRIMARY KEY, app_label varchar(100), "
            "model varchar(100))"
        )
        made.executemany(
            "INSERT INTO django_content_type (app_label, model) VALUES ('tests', ?)",
            [(model,) for model in MODELS],
        )
    made.close()
    return database


def test_an_async_task_iterating_rows_keeps_its_connection_while_another_ends(
    start_worker: Callable[..., Command], tmp_path: Path
) -> None:
    database = database_with_rows(tmp_path)
    started, release = tmp_path / "started", tmp_path / "release"
    worker = start_worker("--threads", "1", extra_env={"THREADMILL_DB": str(database)})
    with running(worker):
        [pid] = worker.child_pids()
        iterating = iterates_in_chunks.enqueue(str(started), str(release))
        wait_until(started.exists, "the first chunk read")
        # Another async task runs and ends while the iteration waits between two chunks.
        counting = counts_rows.enqueue()
        wait_until(lambda: counting.refresh() or counting.is_finished, "the count's outcome")
        assert counting.status == TaskResultStatus.SUCCESSFUL
        assert counting.return_value == len(MODELS)
        release.touch()
        wait_until(lambda: iterating.refresh() or iterating.is_finished, "the iteration's end")
        assert iterating.status == TaskResultStatus.SUCCESSFUL, iterating.errors
        assert iterating.return_value == MODELS
        # With none running, the connection is closed as CONN_MAX_AGE 0 says, as it was.
        wait_until(
            lambda: str(database) not in open_files(pid),
            "the async tasks' connection closed once none runs",
            timeout_s=20,
        )
