"""QUEUES validation and queue routing: which queue names a backend accepts, and where tasks go."""

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.ids import queue_of
from django_threadmill.compat import InvalidTask, task_backends
from django_threadmill.worker.options import served_queues
from testproject.example.tasks import echo
from tests.conftest import tasks_setting


@contextmanager
def backend_with(
    redis_url: str, key_prefix: str, **entry: object
) -> Iterator[ThreadmillTaskBackend]:
    """Yield the default backend with its TASKS entry changed by ``entry``."""
    setting = tasks_setting(redis_url, key_prefix)
    setting["default"] = {**setting["default"], **entry}  # type: ignore[dict-item]
    with override_settings(TASKS=setting):
        backend = task_backends["default"]
        assert isinstance(backend, ThreadmillTaskBackend)
        yield backend


def test_queue_outside_queues_is_refused() -> None:
    with pytest.raises(InvalidTask, match=r"^Queue 'nightly' is not valid for backend\.$"):
        echo.using(queue_name="nightly")


def test_listed_queue_routes_the_task(backend: ThreadmillTaskBackend) -> None:
    result = echo.using(queue_name="reports").enqueue(1)
    assert queue_of(result.id) == "reports"
    assert [r.lease.task_id for r in backend.broker.acquire("reports", 5).reservations] == [
        result.id
    ]
    assert backend.broker.acquire("default", 5).reservations == []


def test_omitted_queues_allow_only_default(redis_url: str, key_prefix: str) -> None:
    setting = tasks_setting(redis_url, key_prefix)
    del setting["default"]["QUEUES"]  # type: ignore[attr-defined]
    with override_settings(TASKS=setting):
        assert task_backends["default"].queues == {"default"}
        with pytest.raises(InvalidTask, match=r"^Queue 'emails' is not valid for backend\.$"):
            echo.using(queue_name="emails")


def test_empty_queues_allow_any_valid_name(redis_url: str, key_prefix: str) -> None:
    with backend_with(redis_url, key_prefix, QUEUES=[]) as backend:
        result = echo.using(queue_name="ad-hoc.queue_1").enqueue(1)
        assert queue_of(result.id) == "ad-hoc.queue_1"
        assert backend.broker.queues() == ["ad-hoc.queue_1"]


@pytest.mark.parametrize("name", ["has space", "brace{", "at@sign", "", "x" * 65])
def test_unusable_queue_name_is_refused(redis_url: str, key_prefix: str, name: str) -> None:
    with (
        backend_with(redis_url, key_prefix, QUEUES=[]),
        pytest.raises(
            InvalidTask,
            match=re.escape(
                f"Queue name {name!r} is not valid for ThreadmillTaskBackend. Use 1-64 "
                "letters, digits, '_', '.' or '-', other than '.' or '..' (URLs read those as "
                "paths)."
            ),
        ),
    ):
        echo.using(queue_name=name)


def test_unusable_name_in_queues_is_a_configuration_error(redis_url: str, key_prefix: str) -> None:
    setting = tasks_setting(redis_url, key_prefix)
    setting["default"]["QUEUES"] = ["default", "bad queue"]  # type: ignore[index]
    with (
        override_settings(TASKS=setting),
        pytest.raises(ImproperlyConfigured, match="Queue name 'bad queue' is not valid"),
    ):
        task_backends["default"]


@pytest.mark.parametrize(("queues", "kind"), [("default", "a str"), (3, "an int")])
def test_queues_that_are_not_a_list_are_a_configuration_error(
    redis_url: str, key_prefix: str, queues: object, kind: str
) -> None:
    """A str would be taken as the set of its letters: queues 'd', 'e', 'f', ..."""
    setting = tasks_setting(redis_url, key_prefix)
    setting["default"]["QUEUES"] = queues  # type: ignore[index]
    message = (
        f"TASKS['default']['QUEUES'] is {queues!r}, {kind}, not a list of queue names. Use a "
        "list, e.g. ['default', 'emails']."
    )
    with override_settings(TASKS=setting), pytest.raises(ImproperlyConfigured) as raised:
        task_backends["default"]
    assert message in str(raised.value)


def test_a_worker_of_empty_queues_must_be_told_which_to_serve(
    redis_url: str, key_prefix: str
) -> None:
    """Empty QUEUES take tasks for any queue: serving "default" alone left the rest READY."""
    with (
        backend_with(redis_url, key_prefix, QUEUES=[]) as backend,
        pytest.raises(ImproperlyConfigured, match=r"QUEUES'\] is empty, so tasks may be"),
    ):
        served_queues(backend, None)
    with backend_with(redis_url, key_prefix, QUEUES=[]) as backend:
        assert served_queues(backend, ["ad-hoc"]) == ("ad-hoc",)
