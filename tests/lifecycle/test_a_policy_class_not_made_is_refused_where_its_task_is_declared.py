"""A retry policy's class given where a policy goes (``retry=ExponentialBackoff``, its
parentheses forgotten) is refused where its task is declared. A class is callable, so it was
taken, and at the task's first failure the worker called ``ExponentialBackoff(context)``, which
raised: "Retry policy raised ... recording FAILED", and the task never retried."""

import pytest

from django_threadmill.compat import InvalidTask
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task

pytestmark = pytest.mark.usefixtures("backend")


def fetch() -> None:
    """A task that carries the policy."""


def test_the_class_is_an_invalid_task_naming_the_fix() -> None:
    with pytest.raises(
        InvalidTask,
        match=(
            r"^retry=ExponentialBackoff on task '.*\.fetch' is a class, not a retry policy\. "
            r"Make one: retry=ExponentialBackoff\(\.\.\.\)\.$"
        ),
    ):
        task(retry=ExponentialBackoff)(fetch)  # type: ignore[arg-type]


def test_an_instance_of_it_is_taken() -> None:
    assert task(retry=ExponentialBackoff())(fetch).retry is not None
