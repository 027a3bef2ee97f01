"""get_result on a record it cannot rebuild raises PayloadError naming the problem and the fix."""

import json
import re
from collections.abc import Callable

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import PayloadError
from testproject.example.tasks import echo


@pytest.fixture
def stored_with(backend: ThreadmillTaskBackend, redis_client: redis.Redis) -> Callable[[str], str]:
    """Enqueue a task, then overwrite its stored payload with ``payload``; return its id."""

    def store(payload: str) -> str:
        task_id = echo.enqueue(1).id
        key = backend.broker.record_key(task_id)
        assert key is not None
        assert redis_client.hset(key, "payload", payload) == 0
        return task_id

    return store


def test_payload_that_is_not_json(
    backend: ThreadmillTaskBackend, stored_with: Callable[[str], str]
) -> None:
    task_id = stored_with("{not json")
    with pytest.raises(
        PayloadError, match=r"^Stored payload is not valid JSON \(.+\); it was corrupted\.$"
    ):
        backend.get_result(task_id)


@pytest.mark.parametrize(
    "payload",
    [[1, 2], {"args": []}, {"path": 5}, {"path": "x.y", "args": {}}, {"path": "x.y", "kwargs": []}],
)
def test_payload_without_the_expected_shape(
    backend: ThreadmillTaskBackend, stored_with: Callable[[str], str], payload: object
) -> None:
    task_id = stored_with(json.dumps(payload))
    message = (
        "Stored payload lacks a task path, a list of args or a dict of kwargs; it was "
        "corrupted or written by something other than django-threadmill."
    )
    with pytest.raises(PayloadError, match=f"^{re.escape(message)}$"):
        backend.get_result(task_id)


def test_task_path_that_no_longer_imports(
    backend: ThreadmillTaskBackend, stored_with: Callable[[str], str]
) -> None:
    task_id = stored_with(json.dumps({"path": "testproject.example.tasks.gone", "args": []}))
    with pytest.raises(
        PayloadError,
        match=(
            r"^Task path 'testproject\.example\.tasks\.gone' does not import \(.+\)\. Deploy "
            r"the code that defines it, or cancel the task\.$"
        ),
    ):
        backend.get_result(task_id)


def test_path_to_something_that_is_not_a_task(
    backend: ThreadmillTaskBackend, stored_with: Callable[[str], str]
) -> None:
    task_id = stored_with(json.dumps({"path": "os.system", "args": ["true"]}))
    message = (
        "'os.system' is a builtin_function_or_method, not a task. Only functions decorated "
        "with @task can be enqueued."
    )
    with pytest.raises(PayloadError, match=f"^{re.escape(message)}$"):
        backend.get_result(task_id)
