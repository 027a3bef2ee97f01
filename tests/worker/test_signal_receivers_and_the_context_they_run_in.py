"""Task signals: a receiver that raises is logged once; the context receivers and tasks run in.

- A receiver of ``task_started`` or ``task_finished`` that raised was logged twice, each time
  with its traceback: by Django's ``send_robust`` (on ``django.dispatch``, naming no task) and
  by the worker. It is logged once, naming the receiver, the signal and the task.
- The watchdog sends ``task_finished`` for a task past ``--task-timeout`` from its own thread:
  what one such send's receivers set (a ``ContextVar``, a language) stayed set for the next,
  and a database connection they opened was never checked nor closed. Each send runs in a fresh
  context, between checks of the watchdog's connections.
- ``async def`` tasks made Django's cache backends afresh, one per task: a Redis cache
  connected again for every task. The event loop keeps Django's Redis cache, as a worker thread
  keeps its caches; the others (memcached clients are not thread-safe) stay per task.
"""

import asyncio
import json
import logging
import textwrap
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import caches
from django.dispatch import Signal

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Outcome
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResult, TaskResultStatus, task, task_finished, task_started
from django_threadmill.worker.executor import Executor
from testproject.example.tasks import async_add, echo
from tests.support import Command, run_to_completion
from tests.worker import tasks

# The executor closes stale database connections per task, as a worker does.
pytestmark = pytest.mark.django_db

# A signal of the project's own, which a task_started receiver sends: its failures are not ours.
project_signal = Signal()


def broken(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
    raise RuntimeError("receiver bug")


def broken_project_receiver(sender: object, **kwargs: Any) -> None:
    raise LookupError("project receiver bug")


def sends_project_signal(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
    project_signal.send_robust(sender)


def _run(backend: ThreadmillTaskBackend, lane: str) -> tuple[str, Outcome]:
    """Enqueue a task of ``lane`` and run it in this process's executor; its id and outcome."""
    result = echo.enqueue(1) if lane == "sync" else async_add.enqueue(1, 2)
    [reservation] = backend.broker.acquire("default", 1).reservations
    executor = Executor("signals-worker", backend.alias, type(backend))
    if lane == "sync":
        finish = executor.run(reservation, now_ms())
        assert finish is not None
    else:
        finish = asyncio.run(executor.arun(reservation, now_ms()))
    return result.id, finish.outcome


@pytest.mark.parametrize("tasks_logger_at", [logging.WARNING], indirect=True)
@pytest.mark.parametrize("signal", [task_started, task_finished], ids=["started", "finished"])
@pytest.mark.parametrize("lane", ["sync", "async"])
def test_a_raising_receiver_is_logged_once_naming_it_and_the_task(
    backend: ThreadmillTaskBackend,
    tasks_logger_at: None,
    caplog: pytest.LogCaptureFixture,
    signal: Signal,
    lane: str,
) -> None:
    signal.connect(broken)
    try:
        with caplog.at_level(logging.ERROR):
            task_id, outcome = _run(backend, lane)
    finally:
        signal.disconnect(broken)

    assert outcome is Outcome.SUCCESSFUL
    name = "started" if signal is task_started else "finished"
    [line] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert line.name == "django_threadmill.observability.signals"
    assert line.getMessage() == (
        f"Signal receiver failed receiver={__name__}.broken signal=task_{name} task_id={task_id}"
    )
    assert line.exc_info is not None
    assert str(line.exc_info[1]) == "receiver bug"


@pytest.mark.parametrize("tasks_logger_at", [logging.WARNING], indirect=True)
@pytest.mark.parametrize("lane", ["sync", "async"])
def test_what_a_receivers_own_send_logs_on_django_dispatch_is_kept(
    backend: ThreadmillTaskBackend,
    tasks_logger_at: None,
    caplog: pytest.LogCaptureFixture,
    lane: str,
) -> None:
    """Only the lines about our own send's receivers are left to ours: another signal's
    failure, in a receiver, is logged by Django as it would be anywhere else."""
    task_started.connect(sends_project_signal)
    project_signal.connect(broken_project_receiver)
    try:
        with caplog.at_level(logging.ERROR):
            _task_id, outcome = _run(backend, lane)
    finally:
        task_started.disconnect(sends_project_signal)
        project_signal.disconnect(broken_project_receiver)

    assert outcome is Outcome.SUCCESSFUL
    [line] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert line.name == "django.dispatch"
    assert "broken_project_receiver" in line.getMessage()


# A burst worker in this process whose task_finished receiver, in the watchdog, prints what it
# finds, then leaves behind what a careless receiver does: a ContextVar and a language set, a
# database connection open.
TIMED_OUT_RECEIVER = textwrap.dedent(
    """
    import json
    import sys
    import threading
    from contextvars import ContextVar

    import django
    from django.core.management import execute_from_command_line

    django.setup()
    from django.db import connection
    from django.utils import translation
    from django_threadmill.compat import task_finished

    tenant = ContextVar("tenant", default=None)

    def careless(sender, task_result, **kwargs):
        if threading.current_thread().name != "threadmill-watchdog":
            return
        seen = {
            "tenant": tenant.get(),
            "language": translation.get_language(),
            "connection_open": connection.connection is not None,
        }
        print("SEEN " + json.dumps(seen), flush=True)
        tenant.set(task_result.id)
        translation.activate("fr")
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")

    task_finished.connect(careless, weak=False)
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[1:]])
    """
)


def test_each_timed_out_tasks_receivers_start_from_a_clean_context(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    stuck = [tasks.wait_for_file.enqueue(str(gate)) for _ in range(2)]
    command = Command(
        redis_url,
        key_prefix,
        *("--processes", "0", "--burst", "--threads", "1", "--task-timeout", "0.5"),
        code=TIMED_OUT_RECEIVER,
    )
    try:
        log = run_to_completion(command)
    finally:
        gate.touch()  # the abandoned threads' tasks end
    assert [backend.get_result(r.id).status for r in stuck] == [TaskResultStatus.FAILED] * 2
    seen = [json.loads(line.removeprefix("SEEN ")) for line in log.splitlines() if "SEEN " in line]
    clean = {"tenant": None, "language": "en-us", "connection_open": False}
    assert seen == [clean, clean], log


@task
async def cache_kept(mark: str) -> dict[str, Any]:
    """Say what the task before it left on each cache backend it finds, then leave ``mark``."""
    left = {}
    for alias in ("default", "local"):
        cache = caches[alias]
        await cache.aset("key", mark)  # used from asgiref's sync thread, then from the loop's
        cache.get("key")
        left[alias] = getattr(cache, "threadmill_mark", None)
        cache.threadmill_mark = mark  # type: ignore[attr-defined]
    left["connection"] = caches["default"]._cache.get_client().client_id()  # type: ignore[attr-defined]
    return left


# A burst worker in this process, running one async task at a time, with Django's Redis cache
# (on the test's Redis) and a local-memory one.
REDIS_CACHED_WORKER = textwrap.dedent(
    """
    import os
    import sys

    from django.conf import settings
    from django.core.management import execute_from_command_line

    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ["REDIS_URL"],
            "KEY_PREFIX": os.environ["THREADMILL_KEY_PREFIX"],
        },
        "local": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[1:]])
    """
)


def test_async_tasks_share_the_loops_redis_cache_and_its_connection(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    enqueued = [cache_kept.enqueue(f"task-{n}") for n in range(4)]
    command = Command(
        redis_url,
        key_prefix,
        *("--processes", "0", "--burst", "--async-concurrency", "1"),
        code=REDIS_CACHED_WORKER,
    )
    log = run_to_completion(command)

    results = [backend.get_result(r.id) for r in enqueued]
    assert [r.status for r in results] == [TaskResultStatus.SUCCESSFUL] * 4, log
    left = [r.return_value for r in results]
    # One Redis cache for the loop, and one connection to Redis: each task finds the mark of
    # the one before it.
    assert [seen["default"] for seen in left] == [None, "task-0", "task-1", "task-2"]
    assert len({seen["connection"] for seen in left}) == 1
    # A backend not shared between threads is each task's own.
    assert [seen["local"] for seen in left] == [None] * 4
