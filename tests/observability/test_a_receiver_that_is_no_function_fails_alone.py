"""A signal receiver that is no function (a callable object, a ``functools.partial``) and
raises fails alone, and is named by the code it runs.

Django's ``send_robust`` names a failing receiver by ``receiver.__qualname__``, which such a
receiver lacks: the AttributeError ended the send there. The receivers after it were never
called, and the worker logged only "Signal not delivered to every receiver … sending it raised
AttributeError", naming neither the receiver nor its error.
"""

import functools
import logging
from typing import Any

import pytest

from django_threadmill.compat import TaskResult, TaskResultStatus, task_started
from django_threadmill.task import ThreadmillTask
from django_threadmill.testing import drain
from testproject.example.tasks import add, async_add

pytestmark = pytest.mark.usefixtures("backend")


class Audit:
    """A receiver written as a class with ``__call__``."""

    def __call__(self, sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        raise RuntimeError("audit receiver bug")


def audit(sender: type, task_result: TaskResult, *, note: str, **kwargs: Any) -> None:
    raise RuntimeError(f"audit receiver bug: {note}")


@pytest.mark.parametrize(
    ("receiver", "named"),
    [
        (Audit(), f"{__name__}.Audit"),
        (functools.partial(audit, note="partial"), f"{__name__}.audit"),
    ],
)
@pytest.mark.parametrize("task", [add, async_add], ids=["sync", "async"])
def test_a_receiver_that_raises_fails_alone_and_is_named_by_its_code(
    task: ThreadmillTask, receiver: Any, named: str, caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[str] = []

    def later(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        heard.append(task_result.id)

    result = task.enqueue(1, 2)
    task_started.connect(receiver, weak=False)
    task_started.connect(later)
    try:
        drain()
    finally:
        task_started.disconnect(receiver)
        task_started.disconnect(later)

    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert heard == [result.id]
    [failure] = [r for r in caplog.records if r.name == "django_threadmill.observability.signals"]
    assert failure.levelno == logging.ERROR
    assert failure.getMessage() == (
        f"Signal receiver failed receiver={named} signal=task_started task_id={result.id}"
    )
    assert failure.exc_info is not None
    assert "audit receiver bug" in str(failure.exc_info[1])
