"""OpenTelemetry: the execution span links to the span that enqueued the task."""

import json
import subprocess
import sys

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import add
from tests.support import ROOT, command_env

ADD, ECHO = "testproject.example.tasks.add", "testproject.example.tasks.echo"


def spans(redis_url: str, key_prefix: str) -> dict[str, list[dict]]:
    """Run the probe in its own process; return its spans by name, oldest first."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.observability.trace_probe"],
        cwd=ROOT,
        env=command_env(redis_url, key_prefix),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
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


def test_enqueue_many_is_one_span_every_run_links_to(redis_url: str, key_prefix: str) -> None:
    found = spans(redis_url, key_prefix)
    [many] = found[f"enqueue {ECHO}"]
    assert many["attributes"]["threadmill.task.count"] == 2
    assert many["parent_id"] is None  # enqueued outside the request span
    runs = found[f"run {ECHO}"]
    assert [run["links"] for run in runs] == [[many["span_id"]]] * 2


def test_without_an_sdk_a_task_carries_no_trace(backend: ThreadmillTaskBackend) -> None:
    result = add.enqueue(1, 2)
    record = backend.broker.record(result.id)
    assert record is not None
    assert '"trace"' not in record["payload"]
