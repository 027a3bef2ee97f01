"""OpenTelemetry: the execution span links to the span that enqueued the task."""

import asyncio
import json
import re

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import BaseTaskBackend, InvalidTask, TaskResultStatus
from django_threadmill.observability import tracing
from testproject.example.tasks import add
from tests.support import run_python

ADD, ECHO = "testproject.example.tasks.add", "testproject.example.tasks.echo"
SEND_WELCOME, SLOW = "testproject.example.tasks.send_welcome", "testproject.example.tasks.slow"


def spans(redis_url: str, key_prefix: str) -> dict[str, list[dict]]:
    """Run the probe in its own process; return its spans by name, oldest first."""
    done = run_python(
        "-m", "tests.observability.trace_probe", redis_url=redis_url, key_prefix=key_prefix
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, list[dict]] = {}
    for span in map(json.loads, done.stdout.splitlines()):
        found.setdefault(span["name"], []).append(span)
    return found


def test_the_execution_span_links_to_the_enqueue_span(redis_url: str, key_prefix: str) -> None:
    found = spans(redis_url, key_prefix)
    [request], [enqueue], [run] = found["request"], found[f"enqueue {ADD}"], found[f"run {ADD}"]
    assert enqueue["parent_id"] == request["span_id"]
    assert enqueue["kind"] == "PRODUCER"
    task_id = enqueue["attributes"]["threadmill.task.id"]
    assert enqueue["attributes"] == {
        "threadmill.task.path": ADD,
        "threadmill.queue": "default",
        "threadmill.task.id": task_id,
    }
    assert run["links"] == [enqueue["span_id"]]
    assert run["kind"] == "CONSUMER"
    assert run["attributes"] == {
        "threadmill.task.path": ADD,
        "threadmill.queue": "default",
        "threadmill.task.id": task_id,
        "threadmill.attempt": 1,
        "threadmill.outcome": "successful",
    }
    assert run["status"] == "UNSET"


def test_a_failed_run_is_an_error_span(redis_url: str, key_prefix: str) -> None:
    [run] = spans(redis_url, key_prefix)["run testproject.example.tasks.fail"]
    assert run["attributes"]["threadmill.outcome"] == "failed"
    assert run["status"] == "ERROR"
    assert len(run["links"]) == 1


def test_a_run_the_watchdog_ended_is_an_error_span(redis_url: str, key_prefix: str) -> None:
    [run] = spans(redis_url, key_prefix)[f"run {SLOW}"]
    assert run["attributes"]["threadmill.outcome"] == "failed"
    assert run["status"] == "ERROR"


def test_enqueue_many_is_one_span_every_run_links_to(redis_url: str, key_prefix: str) -> None:
    found = spans(redis_url, key_prefix)
    [many] = found[f"enqueue {ECHO}"]
    assert many["attributes"]["threadmill.task.count"] == 2
    assert many["parent_id"] is None  # enqueued outside the request span
    runs = found[f"run {ECHO}"]
    assert [run["links"] for run in runs] == [[many["span_id"]]] * 2


def test_calls_by_keyword_are_traced(redis_url: str, key_prefix: str) -> None:
    """The wrapper took the task by position: enqueue(task=..., args=..., kwargs=...), as
    Django's own BaseTaskBackend.aenqueue calls it, raised TypeError."""
    found = spans(redis_url, key_prefix)
    [request], [one], [many] = (
        found["request"],
        found[f"enqueue {SEND_WELCOME}"],
        found[f"enqueue {SLOW}"],
    )
    assert one["parent_id"] == request["span_id"]
    assert one["attributes"]["threadmill.queue"] == "emails"
    assert many["parent_id"] == request["span_id"]
    assert many["attributes"]["threadmill.task.count"] == 1


def test_calls_by_keyword_without_an_sdk(backend: ThreadmillTaskBackend) -> None:
    results = [
        backend.enqueue(task=add, args=(1, 2), kwargs={}),
        *backend.enqueue_many(task=add, calls=[((1, 2), {})]),
        asyncio.run(backend.aenqueue(task=add, args=(1, 2), kwargs={})),
        asyncio.run(BaseTaskBackend.aenqueue(backend, add, (1, 2), {})),
    ]
    assert [r.status for r in results] == [TaskResultStatus.READY] * 4
    assert len({r.id for r in results}) == 4


def test_a_plain_function_is_refused_as_without_tracing(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The enqueue span read the task's module_path first: AttributeError, not InvalidTask."""
    monkeypatch.setattr(tracing, "_tracing", lambda: True)  # spans opened, on the API's no-op
    message = (
        f"{ADD!r} is a function, not a task. Decorate it with @task and enqueue the task it "
        "returns."
    )
    with pytest.raises(InvalidTask, match=f"^{re.escape(message)}$"):
        backend.enqueue(add.func, (1, 2), {})
    with pytest.raises(InvalidTask, match=f"^{re.escape(message)}$"):
        asyncio.run(backend.aenqueue(task=add.func, args=(1, 2), kwargs={}))


def test_without_an_sdk_a_task_carries_no_trace(backend: ThreadmillTaskBackend) -> None:
    result = add.enqueue(1, 2)
    record = backend.broker.record(result.id)
    assert record is not None
    assert '"trace"' not in record["payload"]
