"""django.tasks API conformance: times without USE_TZ, and a task enqueued on another backend."""

import asyncio
import zoneinfo
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import InvalidTask, Task, TaskResult, TaskResultStatus, task_backends
from testproject.example.tasks import echo
from tests.conftest import tasks_setting

ECHO = "testproject.example.tasks.echo"
# A time zone a view activates for its user (Django's own middleware pattern), far from TIME_ZONE.
USERS_ZONE = zoneinfo.ZoneInfo("Asia/Tokyo")


@pytest.fixture
def users_zone_active() -> Iterator[None]:
    """Project without USE_TZ in New York; the request activated its user's Tokyo zone."""
    with (
        override_settings(USE_TZ=False, TIME_ZONE="America/New_York"),
        timezone.override(USERS_ZONE),
    ):
        yield


def test_a_naive_run_after_is_read_in_time_zone_not_the_active_zone(
    backend: ThreadmillTaskBackend, users_zone_active: None
) -> None:
    # An hour from now in TIME_ZONE (timezone.now() without USE_TZ) was read in the active
    # zone, 13 hours behind: the task was stored ready and ran at once.
    run_after = timezone.now().replace(microsecond=0) + timedelta(hours=1)
    result = echo.using(run_after=run_after).enqueue(1)
    assert backend.broker.acquire("default", 1).reservations == []
    read = backend.get_result(result.id)
    assert read.task.run_after == run_after


def test_times_read_back_in_time_zone_not_the_active_zone(
    backend: ThreadmillTaskBackend, users_zone_active: None
) -> None:
    # enqueued_at read 14 hours ahead of timezone.now() in the same request.
    before = timezone.now().replace(microsecond=0)
    result = echo.enqueue(1)
    read = backend.get_result(result.id)
    after = timezone.now() + timedelta(seconds=1)
    for enqueued_at in (result.enqueued_at, read.enqueued_at):
        assert enqueued_at is not None
        assert timezone.is_naive(enqueued_at)
        assert before <= enqueued_at <= after


def test_a_naive_run_after_outside_the_years_names_time_zone(users_zone_active: None) -> None:
    with pytest.raises(InvalidTask, match=r"\(naive: read in America/New_York\)"):
        echo.using(run_after=datetime(9999, 12, 31, 23, 0))


@override_settings(USE_TZ=False, TIME_ZONE=None)
def test_without_time_zone_naive_times_are_the_hosts_local_time(
    backend: ThreadmillTaskBackend,
) -> None:
    # Django reads TIME_ZONE = None as the host's time; every enqueue raised "Arguments of
    # task ... cannot be stored as JSON (expected str, bytes or os.PathLike object, not
    # NoneType)", and every get_result a bare TypeError.
    before = timezone.now().replace(microsecond=0)
    run_after = before + timedelta(hours=2)  # not the ms another test's task was rebuilt for
    result = echo.using(run_after=run_after).enqueue(1)
    read = backend.get_result(result.id)
    assert read.enqueued_at is not None
    assert before <= read.enqueued_at <= timezone.now() + timedelta(seconds=1)
    assert read.task.run_after == run_after
    assert backend.broker.acquire("default", 1).reservations == []


@override_settings(USE_TZ=False, TIME_ZONE=None)
def test_without_time_zone_a_naive_run_after_outside_the_years_is_refused() -> None:
    # Its conversion to the host's time raised a bare ValueError.
    with pytest.raises(InvalidTask, match=r"\(naive: read in the host's local time\), outside"):
        echo.using(run_after=datetime(9999, 12, 31, 23, 59))


@pytest.fixture
def two_backends(redis_url: str, key_prefix: str) -> Iterator[None]:
    """``default`` and ``other``: two Threadmill backends on the same Redis."""
    setting = tasks_setting(redis_url, key_prefix)
    setting["other"] = setting["default"]
    with override_settings(TASKS=setting):
        yield


type Enqueue = Callable[[ThreadmillTaskBackend, Task], TaskResult]


def _enqueue(backend: ThreadmillTaskBackend, task: Task) -> TaskResult:
    return backend.enqueue(task, (1,), {})


def _aenqueue(backend: ThreadmillTaskBackend, task: Task) -> TaskResult:
    return asyncio.run(backend.aenqueue(task, (1,), {}))


def _enqueue_many(backend: ThreadmillTaskBackend, task: Task) -> TaskResult:
    [result] = backend.enqueue_many(task, [((1,), {})])
    return result


@pytest.mark.parametrize("enqueue", [_enqueue, _aenqueue, _enqueue_many], ids=lambda f: f.__name__)
def test_a_task_of_another_backend_is_refused_naming_the_fix(
    two_backends: None, enqueue: Enqueue, redis_client: Any, key_prefix: str
) -> None:
    # It was stored under this backend, while its result and task.get_result(id) looked it
    # up in the task's own: TaskResultDoesNotExist for a task just stored.
    other = echo.using(backend="other")
    message = (
        f"Task {ECHO!r} is for backend 'other', not 'default': its result would be looked up "
        "there. Enqueue it with task.enqueue(...) (or task.get_backend()), or make it this "
        "backend's with task.using(backend='default')."
    )
    backend = task_backends["default"]
    assert isinstance(backend, ThreadmillTaskBackend)
    with pytest.raises(InvalidTask) as raised:
        enqueue(backend, other)
    assert str(raised.value) == message
    assert list(redis_client.scan_iter(f"{key_prefix}:*")) == []


def test_a_task_on_its_own_backend_reads_back_there(two_backends: None) -> None:
    other = echo.using(backend="other")
    result = other.enqueue(1)
    assert result.backend == "other"
    result.refresh()
    assert result.status == TaskResultStatus.READY
    assert other.get_result(result.id).task.backend == "other"
