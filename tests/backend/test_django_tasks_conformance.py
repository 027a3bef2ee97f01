"""What a user of the django.tasks API sees from our backend, beside what Django's backends show:
the result a running task is given, results of another backend, tasks of other kinds, and a
stored run_after read back under the time zone settings of the day.

Runs on Django 6.x and on Django 5.2 with the django-tasks backport alike.
"""

import asyncio
import copy
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import (
    InvalidTask,
    Task,
    TaskContext,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task,
    task_backends,
)
from django_threadmill.testing import drain
from testproject.example.tasks import echo
from tests.backend.conftest import Read
from tests.conftest import tasks_setting

# What each context-taking task saw of its own result while it ran, by result id: a copy, as
# the worker moves the result itself on to its outcome (as ImmediateBackend does).
SEEN_RUNNING: dict[str, TaskResult] = {}


def _keep(context: TaskContext) -> int:
    SEEN_RUNNING[context.task_result.id] = copy.deepcopy(context.task_result)
    return context.attempt


@task(takes_context=True)
def sees_itself(context: TaskContext, value: int) -> int:
    return _keep(context)


@task(takes_context=True)
async def asees_itself(context: TaskContext, value: int) -> int:
    return _keep(context)


def plain_task(func: Callable[..., Any]) -> Task:
    """Make ``func`` a plain django.tasks ``Task``, not the backend's ``task_class``."""
    return Task(func=func)


@plain_task
def doubled(value: int) -> int:
    return value * 2


# Module level, so Django takes it, but a lambda has no name a worker could import.
a_lambda = task(lambda value: value)


@pytest.mark.parametrize("task_of", [sees_itself, asees_itself], ids=["sync", "async"])
def test_a_running_task_sees_its_result_as_django_shows_it(task_of: Task) -> None:
    """As ImmediateBackend's: RUNNING, started now, one attempt by this worker, in UTC."""
    enqueued = task_of.enqueue(7)
    assert drain() == 1
    running = SEEN_RUNNING.pop(enqueued.id)
    assert running.status == TaskResultStatus.RUNNING
    assert not running.is_finished
    assert running.task == task_of
    assert (running.args, running.kwargs, running.backend) == ([7], {}, "default")
    assert running.finished_at is None
    for moment in (running.enqueued_at, running.started_at, running.last_attempted_at):
        assert moment is not None
        assert moment.tzinfo is UTC
    assert running.last_attempted_at == running.started_at
    assert (running.attempts, running.errors) == (1, [])
    enqueued.refresh()
    assert enqueued.worker_ids == running.worker_ids
    assert enqueued.return_value == 1


@pytest.fixture
def two_backends(redis_url: str, key_prefix: str) -> Iterator[None]:
    """``default`` and ``other``: two Threadmill backends on the same Redis and prefix."""
    setting = tasks_setting(redis_url, key_prefix)
    setting["other"] = setting["default"]
    with override_settings(TASKS=setting):
        yield


def test_a_result_of_another_backend_is_not_found_here(two_backends: None) -> None:
    elsewhere = echo.using(backend="other").enqueue(1)
    backend = task_backends["default"]
    readers: list[Read] = [
        backend.get_result,
        echo.get_result,
        lambda found: asyncio.run(backend.aget_result(found)),
        lambda found: asyncio.run(echo.aget_result(found)),
    ]
    for read in readers:
        with pytest.raises(TaskResultDoesNotExist, match=f"^{re.escape(elsewhere.id)}$"):
            read(elsewhere.id)
    assert echo.using(backend="other").get_result(elsewhere.id).id == elsewhere.id


def test_a_plain_django_task_runs_and_reads_back_as_one() -> None:
    enqueued = doubled.using(priority=3).enqueue(4)
    assert drain() == 1
    result = doubled.get_result(enqueued.id)
    assert type(result.task) is Task
    assert result.task == doubled.using(priority=3)
    assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, 8)


def test_a_task_of_a_lambda_is_refused_at_enqueue(
    enqueued: list[tuple[type, TaskResult]],
) -> None:
    """Django takes it, and ImmediateBackend runs it; no worker could import it."""
    path = a_lambda.module_path
    assert path.endswith(".<lambda>")
    with pytest.raises(InvalidTask, match=f"^Task {re.escape(repr(path))} is not found at its"):
        a_lambda.enqueue(1)
    assert enqueued == []


def test_a_run_after_reads_back_under_the_time_zone_settings_of_the_day(
    backend: ThreadmillTaskBackend, read: Read
) -> None:
    """A stored run_after was rebuilt once per process and kept: read after a change of
    TIME_ZONE it was hours off, and after one of USE_TZ naive where Django's are aware."""
    with override_settings(USE_TZ=False, TIME_ZONE="UTC"):
        in_utc = echo.using(run_after=datetime(2100, 1, 1, 5, 0)).enqueue(1)
        assert read(in_utc.id).task.run_after == datetime(2100, 1, 1, 5, 0)
    with override_settings(USE_TZ=False, TIME_ZONE="America/New_York"):
        # The same instant: 00:00 in New York is 05:00 in UTC.
        in_new_york = echo.using(run_after=datetime(2100, 1, 1, 0, 0)).enqueue(1)
        assert read(in_new_york.id).task.run_after == datetime(2100, 1, 1, 0, 0)
    run_after: Any = read(in_new_york.id).task.run_after
    assert timezone.is_aware(run_after)
    assert run_after == datetime(2100, 1, 1, 5, 0, tzinfo=UTC)
