"""@task(unique_for=...): an equal enqueue returns the unfinished task's result, writes nothing."""

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from importlib.util import find_spec
from typing import Any

import pytest
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import InvalidTask, TaskResult, TaskResultStatus, task_enqueued
from django_threadmill.exceptions import UniqueKeyHeld
from django_threadmill.task import task
from tests.backend_support import fail, start, succeed

from .tasks import by_account, keyed_by_a_number, refresh, refresh_account

pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def announced() -> Iterator[list[str]]:
    """Collect the ids every task_enqueued signal announces."""
    seen: list[str] = []

    def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        seen.append(task_result.id)

    task_enqueued.connect(receiver)
    yield seen
    task_enqueued.disconnect(receiver)


def double(value: int) -> int:
    return value * 2


def test_equal_enqueue_returns_the_first_task(announced: list[str]) -> None:
    first = refresh.enqueue(7, full=True)
    again = refresh.enqueue(7, full=True)
    assert again.id == first.id
    assert again.status == TaskResultStatus.READY
    assert announced == [first.id]  # the duplicate enqueued nothing, so it announces nothing


def test_other_arguments_make_another_task() -> None:
    assert refresh.enqueue(7).id != refresh.enqueue(8).id
    assert refresh.enqueue(7).id != refresh.enqueue(7, full=True).id


def test_duplicate_of_a_running_task_reads_running(backend: ThreadmillTaskBackend) -> None:
    first = refresh.enqueue(1)
    start(backend, first.id)
    again = refresh.enqueue(1)
    assert (again.id, again.status) == (first.id, TaskResultStatus.RUNNING)


def test_a_finished_task_frees_the_key(backend: ThreadmillTaskBackend) -> None:
    first = refresh.enqueue(1)
    succeed(backend, first.id, 1)
    assert refresh.enqueue(1).id != first.id


def test_the_order_of_keys_makes_no_other_task() -> None:
    first = refresh.enqueue({"a": 1, "b": {"x": 1, "y": 2}}, full=True)
    assert refresh.enqueue({"b": {"y": 2, "x": 1}, "a": 1}, full=True).id == first.id
    assert refresh.enqueue({"b": {"y": 2, "x": 3}, "a": 1}, full=True).id != first.id
    mixed = refresh.enqueue({1: "a", "b": 2})  # keys that do not sort as they are
    assert refresh.enqueue({"b": 2, 1: "a"}).id == mixed.id


def test_a_requeued_task_holds_its_key_again(backend: ThreadmillTaskBackend) -> None:
    first = refresh.enqueue(1)
    fail(backend, first.id, ValueError("boom"))
    assert backend.broker.requeue(first.id) == "requeued"
    assert refresh.enqueue(1).id == first.id  # it was stored a second time


def test_a_requeue_leaves_a_key_another_task_took(backend: ThreadmillTaskBackend) -> None:
    first = refresh.enqueue(1)
    fail(backend, first.id, ValueError("boom"))
    second = refresh.enqueue(1)
    assert second.id != first.id
    with pytest.raises(UniqueKeyHeld):  # the two would run at once
        backend.broker.requeue(first.id)
    assert refresh.enqueue(1).id == second.id


def test_unique_key_replaces_the_arguments() -> None:
    first = refresh_account.enqueue(5, "signup")
    assert refresh_account.enqueue(5, "login").id == first.id
    assert refresh_account.enqueue(6, "login").id != first.id


def test_the_queue_is_part_of_the_key() -> None:
    assert refresh.using(queue_name="emails").enqueue(1).id != refresh.enqueue(1).id


def test_aenqueue_returns_the_first_task() -> None:
    first = asyncio.run(refresh.aenqueue(3))
    assert asyncio.run(refresh.aenqueue(3)).id == first.id


def test_enqueue_many_folds_duplicates(
    backend: ThreadmillTaskBackend, announced: list[str]
) -> None:
    earlier = refresh.enqueue(1)
    results = backend.enqueue_many(refresh, [((1,), {}), ((2,), {}), ((2,), {}), ((3,), {})])
    ids = [result.id for result in results]
    assert ids[0] == earlier.id
    assert ids[1] == ids[2] != ids[3]
    assert announced == [earlier.id, ids[1], ids[3]]


def test_unique_for_must_be_a_timedelta() -> None:
    with pytest.raises(InvalidTask, match=r"unique_for=300 on task '.*double' is not a window"):
        task(unique_for=300)(double)  # type: ignore[arg-type]


def test_unique_key_needs_unique_for() -> None:
    with pytest.raises(InvalidTask, match=r"needs unique_for and must be a callable"):
        task(unique_key=by_account)(double)


def test_unique_key_must_return_a_string() -> None:
    with pytest.raises(
        TypeError, match=r"unique_key of task '.*keyed_by_a_number' returned 5, not a string"
    ):
        keyed_by_a_number.enqueue(1)


def test_unique_on_a_backend_without_it_says_which_backend_to_use() -> None:
    package = "django.tasks" if find_spec("django.tasks") else "django_tasks"
    immediate = f"{package}.backends.immediate.ImmediateBackend"
    with (
        override_settings(TASKS={"default": {"BACKEND": immediate}}),
        pytest.raises(InvalidTask, match=r"builds Task, which has no unique_for\. Use django_"),
    ):
        task(unique_for=timedelta(seconds=5))(double)


def test_coalesced_aenqueues_of_one_unique_task_store_and_announce_it_once(
    announced: list[str],
) -> None:
    async def together() -> list[TaskResult]:
        return await asyncio.gather(*(refresh.aenqueue(9) for _ in range(50)))

    results = asyncio.run(together())  # one event loop: the loop coalescer batches them
    assert len({result.id for result in results}) == 1
    assert announced == [results[0].id]
