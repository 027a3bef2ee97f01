"""A unique task enqueued with enqueue_on_commit that, at the commit, turns out to duplicate an
unfinished equal task is never stored: a read of its id says so and names that task.

It raised a bare TaskResultDoesNotExist, read as an expired or unknown id, with no word of the
task that stands for it (docs/schedules.md, Unique tasks).
"""

import asyncio
import re
from collections.abc import Callable

import pytest
from django.db import transaction

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, TaskResultDoesNotExist

from .tasks import refresh

pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"enqueue_on_commit": True}


def held_at_commit(late: str, holder: str) -> str:
    return (
        "^"
        + re.escape(
            f"Task {late!r} is not stored: it was enqueued with enqueue_on_commit, and at the "
            f"commit an equal unique task that had not finished, {holder!r}, held the key, so "
            "that task stands for it (docs/schedules.md, Unique tasks). Read that one's "
            f"result: task.get_result({holder!r})."
        )
        + "$"
    )


def reads_of(backend: ThreadmillTaskBackend, result: TaskResult) -> list[Callable[[], object]]:
    return [
        result.refresh,
        lambda: backend.get_result(result.id),
        lambda: refresh.get_result(result.id),
        lambda: asyncio.run(refresh.aget_result(result.id)),
    ]


def test_every_read_of_a_duplicate_found_at_the_commit_names_the_holder(
    backend: ThreadmillTaskBackend,
) -> None:
    holder = refresh.enqueue(7)  # outside a transaction: stored now
    with transaction.atomic():
        late = refresh.enqueue(7)
        [late_of_many] = backend.enqueue_many(refresh, [((7,), {})])
    assert holder.id not in (late.id, late_of_many.id)
    for each in (late, late_of_many):
        for read in reads_of(backend, each):
            with pytest.raises(TaskResultDoesNotExist, match=held_at_commit(each.id, holder.id)):
                read()


def test_a_task_stored_at_the_commit_reads_as_stored(backend: ThreadmillTaskBackend) -> None:
    with transaction.atomic():
        first = refresh.enqueue(8)
    assert backend.get_result(first.id).args == [8]
