"""enqueue_many: calls of one task, validated first, stored in one atomic call, one signal each."""

import re
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import InvalidTask, TaskResult, TaskResultStatus, task_enqueued
from django_threadmill.testing import drain
from testproject.example.tasks import add, echo
from tests.support import script_calls


@pytest.fixture
def enqueued() -> Iterator[list[TaskResult]]:
    seen: list[TaskResult] = []

    def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        assert sender is ThreadmillTaskBackend
        seen.append(task_result)

    task_enqueued.connect(receiver)
    yield seen
    task_enqueued.disconnect(receiver)


def test_every_call_is_stored_in_order(
    backend: ThreadmillTaskBackend, enqueued: list[TaskResult]
) -> None:
    results = backend.enqueue_many(add, [((n,), {"b": n}) for n in range(5)])
    assert [r.args for r in results] == [[n] for n in range(5)]
    assert [r.kwargs for r in results] == [{"b": n} for n in range(5)]
    assert all(r.status == TaskResultStatus.READY for r in results)
    assert enqueued == results
    acquired = backend.broker.acquire("default", 10).reservations
    assert [r.lease.task_id for r in acquired] == [r.id for r in results]
    assert backend.get_result(results[3].id).kwargs == {"b": 3}


def test_a_whole_float_priority_is_stored_as_an_int(backend: ThreadmillTaskBackend) -> None:
    results = backend.enqueue_many(echo.using(priority=5.0), [((1,), {}), ((2,), {})])  # type: ignore[arg-type]
    assert [type(r.task.priority) for r in results] == [int, int]
    assert drain() == 2
    for result in results:
        result.refresh()
        assert (result.status, result.task.priority) == (TaskResultStatus.SUCCESSFUL, 5)


def test_a_large_batch_is_one_atomic_script_call(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    backend.enqueue_many(echo, [((0,), {})])  # registers the queue and loads the script
    count = 2503  # above the 1,000 per call older versions split into separate calls
    before = script_calls(redis_client)
    results = backend.enqueue_many(echo, (((n,), {}) for n in range(count)))
    assert script_calls(redis_client) - before == 1  # one script runs atomically: all or none
    assert len({r.id for r in results}) == count
    acquired = backend.broker.acquire("default", count + 10).reservations
    assert [r.lease.task_id for r in acquired][1:] == [r.id for r in results]


def test_one_bad_call_stores_nothing(
    backend: ThreadmillTaskBackend,
    enqueued: list[TaskResult],
    redis_client: redis.Redis,
    key_prefix: str,
) -> None:
    calls = [((1,), {}), ((object(),), {}), ((3,), {})]
    with pytest.raises(TypeError, match="cannot be stored as JSON"):
        backend.enqueue_many(echo, calls)
    assert enqueued == []
    assert list(redis_client.scan_iter(f"{key_prefix}:*")) == []


def test_no_calls_is_a_noop(backend: ThreadmillTaskBackend, enqueued: list[TaskResult]) -> None:
    assert backend.enqueue_many(echo, []) == []
    assert enqueued == []


def plain(a: int, b: int) -> int:
    """Not decorated with @task."""
    return a + b


def test_a_plain_function_is_refused_naming_the_fix(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(
        InvalidTask,
        match=(
            r"^'tests\.backend\.test_enqueue_many\.plain' is a function, not a task\. Decorate it "
            r"with @task and enqueue the task it returns\.$"
        ),
    ):
        backend.enqueue_many(plain, [((1, 2), {})])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "call",
    [(1, 2), ((1,), {}, 3), 5, ((1,), []), ({"a": 1}, {}), ("ab", {}), [(1,), {}, {}]],
    ids=repr,
)
def test_items_that_are_not_args_kwargs_pairs_are_refused_naming_the_shape(
    backend: ThreadmillTaskBackend,
    enqueued: list[TaskResult],
    redis_client: redis.Redis,
    key_prefix: str,
    call: object,
) -> None:
    message = (
        f"enqueue_many() takes (args, kwargs) pairs, such as ((1, 2), {{'c': 3}}); call 1 is "
        f"{call!r}. Give args as a tuple or list and kwargs as a dict, empty when there are none."
    )
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        backend.enqueue_many(add, [((1, 2), {}), call])  # type: ignore[list-item]
    assert enqueued == []
    assert list(redis_client.scan_iter(f"{key_prefix}:*")) == []


def test_a_failing_receiver_is_raised_once_every_stored_task_was_announced(
    backend: ThreadmillTaskBackend, enqueued: list[TaskResult]
) -> None:
    """Each task of the call is in Redis and will run: a receiver failing on the first once
    kept the others' task_enqueued from being sent at all."""

    def failing(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        raise RuntimeError(f"metrics down for {task_result.args}")

    task_enqueued.connect(failing)
    try:
        with pytest.raises(RuntimeError, match=re.escape("metrics down for [0]")):
            backend.enqueue_many(echo, [((n,), {}) for n in range(3)])
    finally:
        task_enqueued.disconnect(failing)
    assert [result.args for result in enqueued] == [[0], [1], [2]]
    assert [backend.get_result(result.id).args for result in enqueued] == [[0], [1], [2]]


@pytest.mark.parametrize(("calls", "kind"), [(None, "a NoneType"), (5, "an int")], ids=repr)
def test_calls_that_are_not_iterable_are_refused_naming_the_shape(
    backend: ThreadmillTaskBackend, calls: object, kind: str
) -> None:
    """Python's own "'NoneType' object is not iterable" named neither the call nor the fix."""
    message = (
        "enqueue_many() takes an iterable of (args, kwargs) pairs, such as [((1, 2), {'c': 3})]; "
        f"it was given {calls!r}, {kind}. Pass a list with one pair per call."
    )
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        backend.enqueue_many(echo, calls)  # type: ignore[arg-type]
