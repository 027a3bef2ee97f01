"""With enqueue_on_commit, a result read inside the transaction that enqueued the task says it
is stored at the commit: a bare TaskResultDoesNotExist read as an unknown or expired id."""

import asyncio
import re
from collections.abc import Callable

import pytest
from django.db import connection, transaction

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultDoesNotExist, TaskResultStatus
from django_threadmill.progress import progress_of
from django_threadmill.workflows import chain, step
from testproject.example.tasks import echo
from tests.workflows.tasks import add, number

pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"enqueue_on_commit": True}


def stored_at_commit(result_id: str) -> str:
    return (
        "^"
        + re.escape(
            f"Task {result_id!r} is not stored, so it cannot be read: it was enqueued inside a "
            "transaction with enqueue_on_commit, and is stored when that transaction commits "
            "(never, if it rolled back). Do it after the commit."
        )
        + "$"
    )


def reads_of(backend: ThreadmillTaskBackend, result: TaskResult) -> list[Callable[[], object]]:
    return [
        lambda: echo.get_result(result.id),
        lambda: backend.get_result(result.id),
        result.refresh,
        lambda: progress_of(result),
    ]


def test_every_read_inside_the_transaction_says_the_task_is_stored_at_the_commit(
    backend: ThreadmillTaskBackend,
) -> None:
    with transaction.atomic():
        result = echo.enqueue("later")
        [many] = backend.enqueue_many(echo, [(("many",), {})])
        for each in (result, many):
            for read in reads_of(backend, each):
                with pytest.raises(TaskResultDoesNotExist, match=stored_at_commit(each.id)):
                    read()

    result.refresh()
    assert result.status == TaskResultStatus.READY
    assert backend.get_result(many.id).args == ["many"]


def test_a_workflows_first_step_says_so_too(backend: ThreadmillTaskBackend) -> None:
    with transaction.atomic():
        flow = chain(step(number, 1), step(add, 1)).enqueue()
        first = flow.steps[0].task_id
        with pytest.raises(TaskResultDoesNotExist, match=stored_at_commit(first)):
            backend.get_result(first)

    assert backend.get_result(first).status == TaskResultStatus.READY


def test_aget_result_inside_the_transaction_says_so(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # atomic() in async code

    async def read_inside() -> TaskResult:
        try:
            with transaction.atomic():
                result = await echo.aenqueue("later")
                with pytest.raises(TaskResultDoesNotExist, match=stored_at_commit(result.id)):
                    await echo.aget_result(result.id)
                with pytest.raises(TaskResultDoesNotExist, match=stored_at_commit(result.id)):
                    await result.arefresh()
            return result
        finally:
            # As in test_on_commit.py: close the event loop context's own SQLite connection.
            if connection.connection is not None:
                connection.connection.close()

    result = asyncio.run(read_inside())
    assert backend.get_result(result.id).status == TaskResultStatus.READY


def test_a_task_whose_write_was_dropped_or_ran_reads_as_unknown(
    backend: ThreadmillTaskBackend,
) -> None:
    bare = "^{}$".format
    with transaction.atomic():
        with transaction.atomic():
            dropped = echo.enqueue("rolled back with its savepoint")
            transaction.set_rollback(True)
        with pytest.raises(TaskResultDoesNotExist, match=bare(re.escape(dropped.id))):
            backend.get_result(dropped.id)
        transaction.set_rollback(True)
    with pytest.raises(TaskResultDoesNotExist, match=bare(re.escape(dropped.id))):
        backend.get_result(dropped.id)
