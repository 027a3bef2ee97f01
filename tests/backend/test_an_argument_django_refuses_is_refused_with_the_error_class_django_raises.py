"""An argument Django's own backends refuse at enqueue is refused here with an error of the
class they raise, so code written against django.tasks catches it the same way.

Django's ``TaskResult`` refuses bytes that are not UTF-8 with a ``ValueError`` and the other
values JSON cannot hold with a ``TypeError`` (``normalize_json``), in every backend:
DummyBackend, ImmediateBackend, django-tasks-db. Enqueue here raised a ``TypeError`` for all of
them, so an ``except ValueError`` around the enqueue of a file's raw bytes, which catches the
refusal there, let it through here.
"""

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal

import pytest
import redis
from django.conf import settings
from django.test import override_settings
from django.utils.translation import gettext_lazy

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import BaseTaskBackend
from testproject.example.tasks import echo
from tests.backend.conftest import Enqueue

# Django's DummyBackend, from django.tasks or from the django-tasks backport on Django 5.2.
DUMMY_BACKEND = f"{BaseTaskBackend.__module__.rpartition('.')[0]}.dummy.DummyBackend"

REFUSED_BY_DJANGO = [
    b"\xff\xfe",  # bytes that are not UTF-8: ValueError
    datetime(2030, 1, 1, tzinfo=UTC),  # the rest: TypeError
    Decimal("1.5"),
    {1, 2},
    gettext_lazy("a lazy translation"),
]


@pytest.fixture
def with_django_dummy_backend(threadmill_settings: None) -> Iterator[None]:
    """Add Django's DummyBackend beside the test's backend, as the ``dummy`` alias."""
    with override_settings(TASKS={**settings.TASKS, "dummy": {"BACKEND": DUMMY_BACKEND}}):
        yield


def refused_by_django_with(value: object) -> type[Exception]:
    """Return the class of the error Django's DummyBackend refuses ``value`` with."""
    try:
        echo.using(backend="dummy").enqueue(value)
    except (TypeError, ValueError) as refused:
        return type(refused)
    raise AssertionError(f"Django's DummyBackend took {value!r}")


@pytest.mark.parametrize("value", REFUSED_BY_DJANGO, ids=lambda value: type(value).__name__)
def test_an_argument_django_refuses_is_refused_with_the_error_class_django_raises(
    with_django_dummy_backend: None,
    enqueue: Enqueue,
    redis_client: redis.Redis,
    key_prefix: str,
    value: object,
) -> None:
    kind = refused_by_django_with(value)
    for given in ((value,), ([{"nested": value}],)):
        with pytest.raises(kind, match="cannot be stored as JSON"):
            enqueue(echo, *given)
    assert list(redis_client.scan_iter(f"{key_prefix}:*")) == []


def test_bytes_that_are_not_utf8_are_refused_with_a_value_error_as_django_refuses_them(
    with_django_dummy_backend: None, backend: ThreadmillTaskBackend
) -> None:
    """The case that differed: ``except ValueError`` catches the refusal on both backends,
    and in a bulk enqueue too."""
    assert refused_by_django_with(b"\xff") is ValueError
    with pytest.raises(ValueError, match=r"args\[0\] is bytes that are not UTF-8"):
        echo.enqueue(b"\xff")
    with pytest.raises(ValueError, match=r"kwargs\['value'\] is bytes that are not UTF-8"):
        asyncio.run(echo.aenqueue(value=b"\xff"))
    with pytest.raises(ValueError, match=r"^Call 1 .* args\[0\] is bytes that are not UTF-8"):
        backend.enqueue_many(echo, [((1,), {}), ((b"\xff",), {})])
