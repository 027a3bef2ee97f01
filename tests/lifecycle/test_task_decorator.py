"""ThreadmillTask and @task(retry=...): a retry policy travels with the task on every version."""

import pickle
import re
from dataclasses import replace
from importlib.util import find_spec

import django
import pytest
from django.test import override_settings

from django_threadmill.compat import InvalidTask, Task
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import ThreadmillTask, task

from .tasks import NO_WAIT, flaky, plain

pytestmark = pytest.mark.usefixtures("backend")

ON_DJANGO_61 = find_spec("django.tasks") is not None and django.VERSION >= (6, 1)
IMMEDIATE = (
    "django.tasks.backends.immediate.ImmediateBackend"
    if find_spec("django.tasks") is not None
    else "django_tasks.backends.immediate.ImmediateBackend"
)


def double(value: int) -> int:
    return value * 2


def test_decorator_builds_a_threadmill_task_with_the_policy() -> None:
    assert isinstance(flaky, ThreadmillTask)
    assert flaky.retry == NO_WAIT
    assert flaky.takes_context


def test_decorator_works_bare_and_without_a_policy() -> None:
    assert isinstance(plain, ThreadmillTask)
    assert plain.retry is None
    assert task(double).call(2) == 4


def test_policy_survives_using_and_replace() -> None:
    moved = flaky.using(priority=5, queue_name="emails")
    assert moved.retry == NO_WAIT
    assert replace(flaky, priority=-3).retry == NO_WAIT


def test_get_result_rebuilds_the_task_with_its_policy() -> None:
    result = flaky.enqueue(1)
    assert flaky.get_result(result.id).task.retry == NO_WAIT


def test_run_after_is_refused_like_django_does() -> None:
    with pytest.raises(TypeError, match=r"Use \.using\(run_after=\.\.\.\) to set it dynamically"):
        task(run_after=None)(double)


def test_a_retry_that_is_not_a_policy_is_an_invalid_task() -> None:
    with pytest.raises(InvalidTask, match=r"retry=3 on task '.*double' is not a retry policy"):
        task(retry=3)(double)  # type: ignore[arg-type]


def test_retry_on_a_backend_without_policies_says_which_backend_to_use() -> None:
    with (
        override_settings(TASKS={"default": {"BACKEND": IMMEDIATE}}),
        pytest.raises(InvalidTask, match="Task backend 'default' builds Task, which has no retry"),
    ):
        task(retry=NO_WAIT)(double)


def test_enqueue_on_commit_is_taken_by_the_decorator() -> None:
    built = task(enqueue_on_commit=True)(double)
    assert isinstance(built, ThreadmillTask)
    assert built.enqueue_on_commit is True
    assert task(double).enqueue_on_commit is None  # follows OPTIONS['enqueue_on_commit']


def test_enqueue_on_commit_on_a_backend_without_it_says_which_backend_to_use() -> None:
    message = (
        "Task backend 'default' builds Task, which has no enqueue_on_commit. Use "
        "django_threadmill.backend.ThreadmillTaskBackend for that alias, or drop "
        "enqueue_on_commit=."
    )
    with (
        override_settings(TASKS={"default": {"BACKEND": IMMEDIATE}}),
        pytest.raises(InvalidTask, match=f"^{re.escape(message)}$"),
    ):
        task(enqueue_on_commit=True)(double)


def test_plain_tasks_still_work_on_a_backend_without_policies() -> None:
    with override_settings(TASKS={"default": {"BACKEND": IMMEDIATE}}):
        built = task(double)
    assert type(built) is Task


@pytest.mark.skipif(not ON_DJANGO_61, reason="@django.tasks.task forwards kwargs from 6.1 on")
def test_django_61_task_decorator_forwards_retry() -> None:
    from django_threadmill.compat import task as django_task  # django.tasks.task

    policy = ExponentialBackoff(max_attempts=2)
    built = django_task(retry=policy)(double)
    assert isinstance(built, ThreadmillTask)
    assert built.retry == policy


@pytest.mark.skipif(not ON_DJANGO_61, reason="tasks pickle from Django 6.1 on")
def test_task_with_policy_pickles() -> None:
    assert pickle.loads(pickle.dumps(flaky)).retry == NO_WAIT
