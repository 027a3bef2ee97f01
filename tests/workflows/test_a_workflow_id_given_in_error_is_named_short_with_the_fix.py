"""A workflow id that names no workflow gets an error of a few lines that says what a workflow
id is, wherever it is given (docs/workflows.md, The API).

Before, ``get_workflow("x" * 10000)`` (and ``aget_workflow``, ``refresh()``, the admin's page
of the workflow) echoed the whole id, 10,000 characters in one message and log line, and a
task id given in its place got the causes of an expired workflow. ``refresh()`` and
``cancel()`` of a ``WorkflowResult`` built by hand skipped the check ``get_workflow`` makes:
an id of bytes read as no workflow, or cancelled nothing and returned False, and a lone
surrogate failed in the Redis client with a bare ``UnicodeEncodeError``.
"""

import asyncio
from collections.abc import Callable

import pytest
import redis
from django.http import Http404

from django_threadmill.admin import workflows
from django_threadmill.aliases import sources
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import WorkflowDoesNotExist
from django_threadmill.workflows import WorkflowResult, aget_workflow, chain, get_workflow, step

from .tasks import add, number

LONG_ID = "x" * 10_000
SHAPE = "a workflow's id is 32 hex digits, its WorkflowResult.id: pass that."


def read_by_admin(workflow_id: str) -> None:
    """Open the admin's page of ``workflow_id``; raise its 404 as WorkflowDoesNotExist."""
    [source] = sources()
    try:
        workflows.workflow_context(source, workflow_id, None)
    except Http404 as exc:
        raise WorkflowDoesNotExist(str(exc)) from exc


READS: list[Callable[[str], object]] = [
    get_workflow,
    lambda workflow_id: asyncio.run(aget_workflow(workflow_id)),
    lambda workflow_id: WorkflowResult(id=workflow_id, backend="default").refresh(),
    read_by_admin,
]
READ_IDS = ["get_workflow", "aget_workflow", "refresh", "admin_page"]


@pytest.mark.parametrize("read", READS, ids=READ_IDS)
def test_a_long_id_is_shown_by_its_start_and_length(
    backend: ThreadmillTaskBackend, read: Callable[[str], object]
) -> None:
    with pytest.raises(WorkflowDoesNotExist) as raised:
        read(LONG_ID)

    assert str(raised.value) == (
        f"Backend 'default' has no workflow {'x' * 100!r}... (10,000 characters): {SHAPE}"
    )


@pytest.mark.parametrize("read", READS, ids=READ_IDS)
def test_a_task_id_is_named_as_one(
    backend: ThreadmillTaskBackend, read: Callable[[str], object]
) -> None:
    task_id = chain(step(number, 1), step(add, 2)).enqueue().steps[0].task_id

    with pytest.raises(WorkflowDoesNotExist) as raised:
        read(task_id)

    assert str(raised.value) == (
        f"Backend 'default' has no workflow {task_id!r}: that is a task id, read with "
        "get_result(). A workflow's id is 32 hex digits, its WorkflowResult.id: pass that."
    )


def test_an_id_of_a_workflow_gone_names_why_it_may_be_gone(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(WorkflowDoesNotExist, match=r"has no workflow '0{32}': it never did, it"):
        get_workflow("0" * 32)


def test_refresh_and_cancel_refuse_an_id_that_is_no_str_as_get_workflow_does(
    backend: ThreadmillTaskBackend,
) -> None:
    made_by_hand = WorkflowResult(id=b"x" * 10_000, backend="default")  # type: ignore[arg-type]
    message = (
        r"^A workflow id is a str \(WorkflowResult\.id\), not a bytes: "
        r"b'x{46}\.\.\.x{48}'\.$"
    )
    for call in (made_by_hand.refresh, made_by_hand.cancel):
        with pytest.raises(TypeError, match=message):
            call()


def test_an_id_redis_cannot_hold_reads_as_no_workflow_and_cancels_nothing(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, key_prefix: str
) -> None:
    made_by_hand = WorkflowResult(id="\ud800", backend="default")
    keys = set(redis_client.scan_iter(f"{key_prefix}:*"))

    with pytest.raises(WorkflowDoesNotExist, match=rf"has no workflow '\\ud800': {SHAPE}$"):
        made_by_hand.refresh()
    assert made_by_hand.cancel() is False

    assert set(redis_client.scan_iter(f"{key_prefix}:*")) == keys
