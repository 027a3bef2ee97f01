"""A task's ``unique_key`` is given the arguments as stored, as the task gets them
(docs/schedules.md, Unique tasks): two calls the task cannot tell apart are one task, and a key
function that changes what it is given changes nothing of the call."""

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, task_enqueued

from .tasks import keyed_by_repr, sync_account

pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def announced_kwargs() -> Iterator[list[dict[str, Any]]]:
    """Collect the kwargs of every result task_enqueued announces."""
    seen: list[dict[str, Any]] = []

    def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        seen.append(task_result.kwargs)

    task_enqueued.connect(receiver)
    yield seen
    task_enqueued.disconnect(receiver)


def test_dict_keys_the_task_gets_as_strings_reach_unique_key_as_strings(
    backend: ThreadmillTaskBackend,
) -> None:
    first = keyed_by_repr.enqueue({1: "a"})
    assert backend.get_result(first.id).args == [{"1": "a"}]  # what a worker hands the task
    assert keyed_by_repr.enqueue({"1": "a"}).id == first.id
    assert asyncio.run(keyed_by_repr.aenqueue({1: "a"})).id == first.id


def test_a_unique_key_that_pops_an_argument_leaves_the_call_whole(
    backend: ThreadmillTaskBackend, announced_kwargs: list[dict[str, Any]]
) -> None:
    first = sync_account.enqueue(7, reason="signup")
    assert first.kwargs == {"reason": "signup"}
    assert announced_kwargs == [{"reason": "signup"}]
    assert backend.get_result(first.id).kwargs == {"reason": "signup"}
    assert sync_account.enqueue(7, reason="login").id == first.id  # reason is not in the key
    calls = [((7,), {"reason": "x"}), ((8,), {"reason": "y"})]
    [again, other] = backend.enqueue_many(sync_account, calls)
    assert again.id == first.id
    assert other.kwargs == {"reason": "y"}
