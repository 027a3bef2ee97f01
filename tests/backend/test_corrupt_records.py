"""get_result on a record it cannot rebuild raises PayloadError naming the problem and the fix;
fields a read can do without (times, the error count) read as unknown when they are garbage."""

import json
import re
from collections.abc import Callable

import pytest
import redis
from django.core.exceptions import SuspiciousOperation

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import PayloadError
from testproject.example.tasks import echo
from tests.backend.conftest import Read
from tests.backend_support import fail, succeed


def failed_record(backend: ThreadmillTaskBackend) -> tuple[str, str]:
    """Enqueue ``echo`` and record it FAILED; return its id and its record's key."""
    task_id = echo.enqueue(1).id
    fail(backend, task_id, ValueError("boom"))
    key = backend.broker.record_key(task_id)
    assert key is not None
    return task_id, key


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


def unreadable(backend: ThreadmillTaskBackend, task_id: str, problem: str) -> str:
    """Return the pattern of get_result's error for a payload ``problem`` (a pattern) names."""
    key = backend.broker.record_key(task_id)
    return (
        f"^Task {re.escape(repr(task_id))} cannot be read\\. {problem} Look at its record "
        f"\\(redis-cli HGETALL {re.escape(repr(key))}\\), then delete it or restore the payload "
        "\\(docs/lifecycle\\.md, Damaged records\\)\\.$"
    )


def test_payload_that_is_not_json(
    backend: ThreadmillTaskBackend, stored_with: Callable[[str], str]
) -> None:
    task_id = stored_with("{not json")
    problem = r"Stored payload is not valid JSON \(.+\); it was corrupted\."
    with pytest.raises(PayloadError, match=unreadable(backend, task_id, problem)):
        backend.get_result(task_id)


def test_record_without_a_payload(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    task_id = echo.enqueue(1).id
    redis_client.hdel(backend.broker.record_key(task_id) or "", "payload")
    problem = re.escape(
        "Stored record has no payload; it was corrupted or written by something other than "
        "django-threadmill."
    )
    with pytest.raises(PayloadError, match=unreadable(backend, task_id, problem)):
        backend.get_result(task_id)


@pytest.mark.parametrize(
    "payload",
    [[1, 2], {"args": []}, {"path": 5}, {"path": "x.y", "args": {}}, {"path": "x.y", "kwargs": []}],
)
def test_payload_without_the_expected_shape(
    backend: ThreadmillTaskBackend, stored_with: Callable[[str], str], payload: object
) -> None:
    task_id = stored_with(json.dumps(payload))
    problem = re.escape(
        "Stored payload lacks a task path, a list of args or a dict of kwargs; it was "
        "corrupted or written by something other than django-threadmill."
    )
    with pytest.raises(PayloadError, match=unreadable(backend, task_id, problem)):
        backend.get_result(task_id)


def test_a_whole_float_priority_stored_by_an_earlier_release_is_read(
    stored_with: Callable[[str], str], read: Read
) -> None:
    """Enqueue stored priority=5.0 as written; it stores an int now, and reads such records."""
    path = "testproject.example.tasks.echo"
    task_id = stored_with(json.dumps({"path": path, "args": [1], "priority": 5.0}))
    assert read(task_id).task.priority == 5


@pytest.mark.parametrize("priority", [5.5, "5"])
def test_a_priority_that_is_not_a_whole_number_is_refused(
    stored_with: Callable[[str], str], read: Read, priority: object
) -> None:
    path = "testproject.example.tasks.echo"
    task_id = stored_with(json.dumps({"path": path, "args": [1], "priority": priority}))
    message = (
        f"Stored payload of {path!r} has priority={priority!r} and run_after_ms=None; both "
        "must be whole numbers. It was corrupted."
    )
    with pytest.raises(PayloadError, match=f"^{re.escape(message)}$"):
        read(task_id)


def test_task_path_that_no_longer_imports(
    backend: ThreadmillTaskBackend, stored_with: Callable[[str], str]
) -> None:
    task_id = stored_with(json.dumps({"path": "testproject.example.tasks.gone", "args": []}))
    with pytest.raises(
        ImportError,  # what code that imports tasks by path already catches
        match=(
            r"^Task path 'testproject\.example\.tasks\.gone' does not import \(.+\)\. Deploy "
            r"the code that defines it and restart the workers, which import a task's module "
            r"once, or cancel the task\.$"
        ),
    ) as raised:
        backend.get_result(task_id)
    assert isinstance(raised.value, PayloadError)


def test_path_to_something_that_is_not_a_task(
    backend: ThreadmillTaskBackend, stored_with: Callable[[str], str]
) -> None:
    task_id = stored_with(json.dumps({"path": "os.system", "args": ["true"]}))
    message = (
        "'os.system' is a builtin_function_or_method, not a task. Only functions decorated "
        "with @task can be enqueued."
    )
    with pytest.raises(SuspiciousOperation, match=f"^{re.escape(message)}$") as raised:
        backend.get_result(task_id)
    assert isinstance(raised.value, PayloadError)


def test_record_key_of_another_type_names_the_key_and_the_fix(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, read: Read
) -> None:
    task_id = echo.enqueue(1).id
    key = backend.broker.record_key(task_id)
    assert key is not None
    redis_client.delete(key)
    redis_client.rpush(key, "x")

    message = (
        f"Task {task_id!r} cannot be read: its key {key!r} holds a list, not a hash, so "
        "something other than django-threadmill wrote it. Look at it (redis-cli TYPE, DUMP), "
        "then delete it or restore the record (docs/lifecycle.md, Damaged records)."
    )
    with pytest.raises(PayloadError, match=f"^{re.escape(message)}$"):
        read(task_id)


def test_times_and_error_count_that_are_not_numbers_read_as_unknown(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, read: Read
) -> None:
    task_id, key = failed_record(backend)
    redis_client.hset(
        key,
        mapping={
            "enqueued_ms": "garbage",
            "started_ms": "-",
            "finished_ms": "9" * 30,  # past the year 9999
            "nerrors": "many",
        },
    )

    result = read(task_id)

    assert result.status == TaskResultStatus.FAILED
    assert (result.enqueued_at, result.started_at, result.finished_at) == (None, None, None)
    assert result.errors == []


@pytest.mark.parametrize(
    "stored", ["{not json", "[" * 100_000 + "]" * 100_000], ids=["garbage", "nested too deep"]
)
def test_stored_result_that_is_not_json(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, read: Read, stored: str
) -> None:
    task_id = echo.enqueue(1).id
    succeed(backend, task_id, 1)
    key = backend.broker.record_key(task_id)
    assert key is not None
    redis_client.hset(key, "result", stored)

    with pytest.raises(
        PayloadError,
        match=rf"^Stored result of task {re.escape(repr(task_id))} is not valid JSON \(.+\); it "
        r"was corrupted\.$",
    ):
        read(task_id)


def test_an_error_whose_traceback_is_not_text_reads_as_unreadable(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, read: Read
) -> None:
    task_id, key = failed_record(backend)
    raw = json.dumps({"exception_class_path": "builtins.ValueError", "traceback": 7})
    redis_client.hset(key, "error:1", raw)

    [error] = read(task_id).errors

    assert error.exception_class_path == "django_threadmill.exceptions.PayloadError"
    assert error.traceback == f"Stored error is not readable: {raw!r}"


def test_a_record_that_is_not_utf8(
    read: Read, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """Bytes that do not decode failed the reply's decoding with a bare UnicodeDecodeError."""
    task_id = echo.enqueue(1).id
    key = backend.broker.record_key(task_id)
    assert key is not None
    redis_client.hset(key, "payload", b'{"path":"\xff"}')
    with pytest.raises(PayloadError, match=r"holds bytes that are not UTF-8.*Damaged records"):
        read(task_id)
