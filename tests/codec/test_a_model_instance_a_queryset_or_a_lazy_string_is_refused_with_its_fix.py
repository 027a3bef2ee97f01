"""The Django values most often passed to a task, or returned by one, by mistake are refused
naming the fix (docs/enqueue.md): a model instance, a QuerySet, a lazy string, the TaskResult of
a task enqueued from another.

The refusal named only the type and the generic fix: "args[0] is an User (Unsupported type:
...). Pass strings, numbers, ...", with its article wrong, and a lazy translation string was
"a __proxy__", a name the user never wrote.
"""

import asyncio
import re
from collections.abc import Callable, Iterator

import pytest
import redis
from django.conf import settings
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils.translation import gettext_lazy

from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import UnstorableArguments
from django_threadmill.task import task
from testproject.example.tasks import echo
from tests.support import Command, django_backend, run_to_completion


@pytest.fixture
def with_immediate_backend(threadmill_settings: None) -> Iterator[None]:
    """Add Django's ImmediateBackend as ``immediate``, to make a TaskResult without Redis."""
    immediate = {"BACKEND": django_backend("immediate.ImmediateBackend")}
    with override_settings(TASKS={**settings.TASKS, "immediate": immediate}):
        yield


NAMED = [
    (lambda: User(pk=7, username="ada"), "is a User model instance (use its pk, and fetch"),
    (lambda: User.objects.none(), "is a QuerySet (use a list of its pks: list(qs.values_list("),
    (lambda: gettext_lazy("Welcome"), "is a lazy string, as gettext_lazy and reverse_lazy make"),
    (lambda: echo.using(backend="immediate").enqueue(1), "is a TaskResult (use its id, which"),
]


@task
def returns_a_user() -> object:
    return User(pk=7, username="ada")


@task
def returns_a_lazy_string() -> object:
    return {"subject": gettext_lazy("Welcome")}


@task
def returns_a_result() -> object:
    return {"follow_up": echo.enqueue(1)}


@pytest.mark.parametrize("how", ["enqueue", "aenqueue"])
@pytest.mark.parametrize(("made", "named"), NAMED, ids=["model", "queryset", "lazy", "result"])
def test_an_argument_is_refused_naming_its_fix_and_nothing_is_stored(
    with_immediate_backend: None,
    redis_client: redis.Redis,
    key_prefix: str,
    how: str,
    made: Callable[[], object],
    named: str,
) -> None:
    value = made()

    def call() -> object:
        if how == "enqueue":
            return echo.enqueue(to=value)
        return asyncio.run(echo.aenqueue(to=value))

    with pytest.raises(UnstorableArguments, match=re.escape(f": kwargs['to'] {named}")):
        call()
    assert list(redis_client.scan_iter(f"{key_prefix}:*")) == []


def test_a_return_value_is_refused_naming_its_fix(start_worker: Callable[..., Command]) -> None:
    user, lazy, result = (
        made.enqueue() for made in (returns_a_user, returns_a_lazy_string, returns_a_result)
    )

    run_to_completion(start_worker("--threads", "1", "--burst"))

    for failed in (user, lazy, result):
        failed.refresh()
        assert failed.status == TaskResultStatus.FAILED
        [error] = failed.errors
        assert error.exception_class_path == "builtins.TypeError"
    assert f"which is not JSON: return value {NAMED[0][1]}" in user.errors[0].traceback
    assert f"return value['subject'] {NAMED[2][1]}" in lazy.errors[0].traceback
    assert f"return value['follow_up'] {NAMED[3][1]}" in result.errors[0].traceback
