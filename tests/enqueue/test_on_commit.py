"""OPTIONS["enqueue_on_commit"]: the write waits for the default database's commit."""

import asyncio
import re
import signal
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import (
    InvalidTask,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_enqueued,
)
from testproject.example.tasks import echo
from tests.support import wait_until, worker

pytestmark = pytest.mark.usefixtures("transactional_db")


# Django 6.1 renamed savepoint() to savepoint_create() and deprecated the old name.
savepoint_create = getattr(transaction, "savepoint_create", None) or transaction.savepoint


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"enqueue_on_commit": True}


@pytest.fixture
def enqueued() -> Iterator[list[TaskResult]]:
    seen: list[TaskResult] = []

    def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        seen.append(task_result)

    task_enqueued.connect(receiver)
    yield seen
    task_enqueued.disconnect(receiver)


def stored(backend: ThreadmillTaskBackend, result: TaskResult) -> bool:
    try:
        backend.get_result(result.id)
    except TaskResultDoesNotExist:
        return False
    return True


def test_outside_a_transaction_the_write_happens_at_once(
    backend: ThreadmillTaskBackend, enqueued: list[TaskResult]
) -> None:
    result = echo.enqueue("now")
    assert stored(backend, result)
    assert enqueued == [result]


def test_rollback_writes_nothing(
    backend: ThreadmillTaskBackend, enqueued: list[TaskResult]
) -> None:
    with transaction.atomic():
        User.objects.create(username="ada")
        result = echo.enqueue("never")
        many = backend.enqueue_many(echo, [(("never either",), {})] * 3)
        assert result.status == TaskResultStatus.READY  # the id is known at once
        transaction.set_rollback(True)
    assert not User.objects.exists()
    assert not any(stored(backend, r) for r in [result, *many])
    assert enqueued == []


def test_commit_writes_and_a_running_worker_executes_it(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    command = worker(redis_url, key_prefix)
    try:
        command.wait_for_log(r"Worker process started")
        with transaction.atomic():
            User.objects.create(username="ada")
            result = echo.enqueue("after commit")
            assert not stored(backend, result)  # get_result raises until the commit
        wait_until(
            lambda: backend.get_result(result.id).status == TaskResultStatus.SUCCESSFUL,
            "the committed task ran",
        )
        assert backend.get_result(result.id).return_value == "after commit"
        command.signal(signal.SIGTERM)
        assert command.wait() == 0, command.log
    finally:
        command.close()


def test_nested_blocks_write_on_the_outermost_commit(backend: ThreadmillTaskBackend) -> None:
    with transaction.atomic():
        outer = echo.enqueue("outer")
        with transaction.atomic():
            inner = echo.enqueue("inner")
        with transaction.atomic():
            dropped = echo.enqueue("rolled back with its savepoint")
            transaction.set_rollback(True)
        assert not stored(backend, inner)
    assert stored(backend, outer)
    assert stored(backend, inner)
    assert not stored(backend, dropped)


def test_outer_rollback_drops_inner_committed_blocks(backend: ThreadmillTaskBackend) -> None:
    with transaction.atomic():
        with transaction.atomic():
            inner = echo.enqueue("inner")
        transaction.set_rollback(True)
    assert not stored(backend, inner)


def test_manual_savepoints_behave_as_djangos_own_on_commit(backend: ThreadmillTaskBackend) -> None:
    # Django drops callbacks only with the savepoints of atomic blocks; one made by hand and
    # rolled back keeps them. An enqueue after it follows Django's own callback either way.
    ran: list[str] = []
    with transaction.atomic():
        kept = echo.enqueue("kept")
        savepoint = savepoint_create()
        after = echo.enqueue("after the savepoint")
        transaction.on_commit(lambda: ran.append("django's own callback"))
        transaction.savepoint_rollback(savepoint)
    assert stored(backend, kept)
    assert stored(backend, after) == bool(ran)


def test_a_task_can_opt_out_per_call(backend: ThreadmillTaskBackend) -> None:
    with transaction.atomic():
        now = echo.using(enqueue_on_commit=False).enqueue("now")
        assert stored(backend, now)


@pytest.mark.parametrize("tasks_options", [{}])
def test_a_task_can_opt_in_per_call(backend: ThreadmillTaskBackend) -> None:
    deferred = echo.using(enqueue_on_commit=True, priority=5)
    assert (deferred.priority, echo.using(priority=5).enqueue_on_commit) == (5, None)
    with transaction.atomic():
        result = deferred.enqueue("never")
        transaction.set_rollback(True)
    assert not stored(backend, result)


def test_a_choice_that_is_not_a_bool_is_refused() -> None:
    message = (
        "enqueue_on_commit='yes' on task 'testproject.example.tasks.echo' is not a choice. "
        "Pass True (wait for the commit), False (write at once) or None (follow "
        "OPTIONS['enqueue_on_commit'])."
    )
    with pytest.raises(InvalidTask, match=f"^{re.escape(message)}$"):
        echo.using(enqueue_on_commit="yes")


def test_aenqueue_in_an_event_loop_writes_at_once(
    backend: ThreadmillTaskBackend, enqueued: list[TaskResult]
) -> None:
    # Django opens no transaction in async code: there is no commit to wait for.
    result = asyncio.run(echo.aenqueue("async"))
    assert stored(backend, result)
    assert enqueued == [result]


def test_aenqueue_inside_an_atomic_block_waits_for_the_commit(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Django refuses atomic() in async code unless told it is safe; where it is entered,
    # aenqueue waits for its commit like enqueue.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    async def in_transactions() -> tuple[TaskResult, TaskResult]:
        try:
            with transaction.atomic():
                kept = await echo.aenqueue("kept")
                assert not stored(backend, kept)
                with transaction.atomic():
                    dropped = await echo.aenqueue("dropped")
                    transaction.set_rollback(True)
            return kept, dropped
        finally:
            # The event loop's context opened a connection of its own, and Django ignores
            # close() on an in-memory SQLite database: close the driver's connection, or
            # Python 3.13 warns (an error here) when it is collected open.
            if connection.connection is not None:
                connection.connection.close()

    kept, dropped = asyncio.run(in_transactions())
    assert stored(backend, kept)
    assert not stored(backend, dropped)
