"""A refused call of enqueue_many names its place; a schedule too large to fire is a check error."""

import re

import pytest
import redis
from django.core.checks import CheckMessage
from django.db import transaction
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult, task_backends
from django_threadmill.schedules.checks import BAD_ARGUMENTS, TOO_LARGE, schedule_messages
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.schedules.tasks import report

LIMIT = 300  # max_payload_bytes of these tests: a 400-character argument is above it
ECHO = "testproject.example.tasks.echo"
REPORT = "tests.schedules.tasks.report"
WHERE = "TASKS['default']['OPTIONS']['schedules']['s']: "


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"max_payload_bytes": LIMIT}


def nested(depth: int) -> list[object]:
    """Return a list nested ``depth`` levels deep: deeper than JSON encodes from Python."""
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


def refused_call(number: int, total: int, problem: str) -> str:
    """Return the message of enqueue_many refusing call ``number`` of ``total`` of echo."""
    return (
        f"Call {number} (counting from 0) of enqueue_many() for task {ECHO!r} was refused, so "
        f"none of its {total} calls were stored: {problem}"
    )


def payload_bytes(error: object) -> int:
    """Return the payload size an enqueue's error (or a check's message) names."""
    found = re.search(r"payload is (\d+) bytes", str(error))
    assert found, error
    return int(found[1])


def test_a_call_above_max_payload_bytes_is_named_and_nothing_is_stored(
    backend: ThreadmillTaskBackend,
    enqueued: list[tuple[type, TaskResult]],
    redis_client: redis.Redis,
    key_prefix: str,
) -> None:
    """The error named the task only, the same for every call: which of 3 was too large?"""
    with pytest.raises(ValueError, match="payload is") as refused:
        backend.enqueue_many(echo, [((1,), {}), ((2,), {}), (("x" * 400,), {})])
    size = payload_bytes(refused.value)
    problem = (
        f"Task {ECHO!r} payload is {size} bytes, above max_payload_bytes={LIMIT}. Store large "
        "data elsewhere (a file or a model) and pass its key, or raise "
        "OPTIONS['max_payload_bytes']."
    )
    assert str(refused.value) == refused_call(2, 3, problem)
    assert isinstance(refused.value.__cause__, ValueError)
    assert str(refused.value.__cause__) == problem  # what enqueue of that call alone says
    assert enqueued == []
    assert list(redis_client.scan_iter(f"{key_prefix}:*")) == []


@pytest.mark.parametrize(
    ("call", "problem"),
    [
        (
            ((object(),), {}),
            "Arguments of task 'testproject.example.tasks.echo' cannot be stored as JSON",
        ),
        (((), {1: "a"}), "Keyword argument 1 of task 'testproject.example.tasks.echo' is named"),
        (((nested(5000),), {}), "Arguments of task 'testproject.example.tasks.echo' are nested"),
    ],
    ids=["not-json", "keyword-not-a-str", "nested-too-deeply"],
)
def test_a_call_that_cannot_be_encoded_is_named_and_nothing_is_stored(
    backend: ThreadmillTaskBackend,
    enqueued: list[tuple[type, TaskResult]],
    redis_client: redis.Redis,
    key_prefix: str,
    call: tuple[tuple[object, ...], dict[object, object]],
    problem: str,
) -> None:
    calls = [((0,), {}), call, ((2,), {}), ((3,), {})]
    message = f"^{re.escape(refused_call(1, 4, problem))}"
    with pytest.raises(TypeError, match=message):
        backend.enqueue_many(echo, calls)  # type: ignore[arg-type]
    assert enqueued == []
    assert list(redis_client.scan_iter(f"{key_prefix}:*")) == []


@pytest.mark.django_db(transaction=True)
def test_a_refused_call_leaves_nothing_for_the_commit(
    backend: ThreadmillTaskBackend,
    enqueued: list[tuple[type, TaskResult]],
    redis_client: redis.Redis,
    key_prefix: str,
) -> None:
    """With enqueue_on_commit every call is still encoded first: none waits for the commit."""
    waits = echo.using(enqueue_on_commit=True)  # type: ignore[call-arg]
    with transaction.atomic():
        with pytest.raises(ValueError, match=re.escape(refused_call(1, 2, "Task"))):
            backend.enqueue_many(waits, [((1,), {}), (("x" * 400,), {})])
        assert transaction.get_connection().run_on_commit == []
    assert enqueued == []
    assert list(redis_client.scan_iter(f"{key_prefix}:*")) == []


def schedule_errors(
    redis_url: str, key_prefix: str, max_payload_bytes: int, args: list[object]
) -> list[CheckMessage]:
    """Return the check messages of a backend whose one schedule "s" fires report(*args)."""
    entry = {"task": REPORT, "cron": "0 3 * * *", "args": args}
    tasks = tasks_setting(
        redis_url, key_prefix, max_payload_bytes=max_payload_bytes, schedules={"s": entry}
    )
    with override_settings(TASKS=tasks):
        backend = task_backends["default"]
        return schedule_messages(backend.settings, backend.queues)  # type: ignore[attr-defined]


def test_a_schedule_whose_payload_is_too_large_is_an_error_naming_size_limit_and_fix(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    """It passed the checks, then every slot's enqueue raised ValueError and nothing ran."""
    [error] = schedule_errors(redis_url, key_prefix, LIMIT, ["x" * 400])
    size = payload_bytes(error)
    with pytest.raises(ValueError, match="payload is") as refused:
        backend.enqueue(report, ["x" * 400], {})  # a slot's enqueue: the same payload
    assert size == payload_bytes(refused.value)
    assert (error.id, error.msg, error.hint) == (
        TOO_LARGE,
        f"{WHERE}args and kwargs would fail every slot (Task {REPORT!r} payload is {size} "
        f"bytes, above max_payload_bytes={LIMIT}. Store large data elsewhere (a file or a "
        "model) and pass its key, or raise OPTIONS['max_payload_bytes']).",
        "Keep large data out of the schedule: store it elsewhere (a file or a model) and give "
        "'args' or 'kwargs' its key, or raise TASKS['default']['OPTIONS']['max_payload_bytes'].",
    )
    assert schedule_errors(redis_url, key_prefix, size, ["x" * 400]) == []  # exactly the limit
    [(found_id, _)] = [
        (m.id, m.msg) for m in schedule_errors(redis_url, key_prefix, size - 1, ["x" * 400])
    ]
    assert found_id == TOO_LARGE


def test_schedule_args_nested_too_deeply_are_an_error_not_a_crash(
    redis_url: str, key_prefix: str
) -> None:
    """RecursionError escaped the check: every manage.py command ended in its traceback."""
    [error] = schedule_errors(redis_url, key_prefix, LIMIT, [nested(5000)])
    assert (error.id, error.msg) == (
        BAD_ARGUMENTS,
        f"{WHERE}args or kwargs are nested too deeply to store as JSON; flatten them, or store "
        "the data elsewhere and give its key.",
    )
