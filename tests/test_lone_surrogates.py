"""Text UTF-8 cannot hold (a lone surrogate, as os.fsdecode and sys.argv leave a byte that is
not UTF-8) is refused, or reads as unknown, at the call that brings it: it never reaches the
Redis client, whose encoding failed with a bare UnicodeEncodeError far from its cause."""

from collections.abc import Callable

import pytest
from django.core.management import CommandError

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from django_threadmill.compat import TaskResultDoesNotExist, TaskResultStatus
from django_threadmill.exceptions import WorkflowDoesNotExist
from django_threadmill.workflows import chain, get_workflow, step
from testproject.example.tasks import add, echo
from tests.support import output_of

NOT_UTF8 = "\udcff"  # the byte 0xff, as Python decodes it with errors="surrogateescape"


@pytest.mark.parametrize(
    "call",
    [
        lambda backend, task_id: backend.get_result(task_id),
        lambda backend, task_id: backend.cancel(task_id),
        lambda backend, task_id: backend.requeue(task_id),
    ],
    ids=["get_result", "cancel", "requeue"],
)
def test_a_task_id_utf8_cannot_hold_names_no_task(
    backend: ThreadmillTaskBackend, call: Callable[[ThreadmillTaskBackend, str], object]
) -> None:
    with pytest.raises(TaskResultDoesNotExist):
        call(backend, f"{NOT_UTF8}@default")


async def test_aget_result_of_an_id_utf8_cannot_hold_names_no_task(
    backend: ThreadmillTaskBackend,
) -> None:
    with pytest.raises(TaskResultDoesNotExist):
        await backend.aget_result(f"{NOT_UTF8}@default")


def test_a_workflow_id_utf8_cannot_hold_names_no_workflow(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(WorkflowDoesNotExist, match=r"has no workflow '\\udcff'"):
        get_workflow(NOT_UTF8)
    with pytest.raises(TypeError, match=r"A workflow id is a str \(WorkflowResult.id\), not an"):
        get_workflow(7)  # type: ignore[arg-type]


def test_a_workflow_cancel_reason_utf8_cannot_hold_is_refused_and_nothing_changes(
    backend: ThreadmillTaskBackend,
) -> None:
    flow = chain(step(add, 1, 2), step(add, 3)).enqueue()
    with pytest.raises(ValueError, match=r"cancel\(\) reason holds '\\udcff' at index 5"):
        flow.cancel(f"typo {NOT_UTF8}")
    flow.refresh()
    assert flow.status == TaskResultStatus.READY
    assert flow.steps[0].state == "READY"


def test_a_pause_reason_typed_in_another_encoding_is_refused_naming_the_fix(
    backend: ThreadmillTaskBackend,
) -> None:
    # What a Latin-1 terminal sends for "café": Python makes the 0xe9 byte a lone surrogate.
    with pytest.raises(CommandError, match=r'"caf\\udce9" holds bytes that are not UTF-8'):
        output_of("threadmill_queue", "pause", "emails", "--reason", "caf\udce9")
    assert Inspector(backend.broker).paused(["emails"]) == {}


def test_forget_damaged_refuses_an_id_typed_in_another_encoding(
    backend: ThreadmillTaskBackend,
) -> None:
    echo.enqueue(1)
    with pytest.raises(CommandError, match=r"argument ID: .* holds bytes that are not UTF-8"):
        output_of("threadmill_queue", "forget-damaged", "default", f"{NOT_UTF8}@default")
