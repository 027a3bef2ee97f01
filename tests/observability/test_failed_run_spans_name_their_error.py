"""A failed attempt's run span names its error, in the sync and the async lane alike.

A failed run span had status ERROR and nothing more: no description and no exception event, so
a trace viewer showed neither the error's type nor its message; and an async task that timed
out lacked the description a sync one got. Run as ``python -m <this module> <folder>``, this
file is the probe: it runs failing tasks with the OpenTelemetry SDK exporting in memory (the
tracer provider is set once per process) and prints each run span as a JSON line. A span that
cannot take the exception event fails no task, as any tracer that raises.
"""

import json
import sys
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from django_threadmill.broker import Lease, Outcome
from django_threadmill.exceptions import TaskTimeout
from django_threadmill.observability import tracing
from django_threadmill.worker import outcome
from tests.support import run_python

FAIL, FLAKY = "testproject.example.tasks.fail", "testproject.example.tasks.flaky"
ASYNC_FLAKY, FOREVER = "tests.worker.async_tasks.flaky", "tests.worker.async_tasks.forever"
LONG_MESSAGE = "x" * 5000


@pytest.fixture
def runs(redis_url: str, key_prefix: str, tmp_path: Path) -> dict[str, dict]:
    """Run the probe; return its run spans by task path."""
    done = run_python("-m", __name__, str(tmp_path), redis_url=redis_url, key_prefix=key_prefix)
    assert done.returncode == 0, done.stderr
    assert "OpenTelemetry raised" not in done.stderr
    return {span["path"]: span for span in map(json.loads, done.stdout.splitlines())}


RAISED = [  # task path, outcome, exception, message
    (FAIL, "failed", "ValueError", "on purpose"),
    (FLAKY, "retry", "ConnectionError", "attempt 1: upstream not ready"),
    (ASYNC_FLAKY, "retry", "ConnectionError", "first attempt fails"),
]


def test_a_raised_attempt_names_its_error_on_its_run_span_in_either_lane(
    runs: dict[str, dict],
) -> None:
    for path, ended, kind, message in RAISED:
        run = runs[path]
        assert run["outcome"] == ended
        assert run["status"] == "ERROR"
        assert run["description"] == f"{kind}: {message}"
        [event] = run["events"]
        assert event["name"] == "exception"
        assert event["attributes"]["exception.type"] == kind
        assert event["attributes"]["exception.message"] == message
        stacktrace = event["attributes"]["exception.stacktrace"]
        assert stacktrace.startswith("Traceback (most recent call last):")
        assert stacktrace.endswith(f"{kind}: {message}\n")


def sdk_type_name(error: Exception) -> str:
    """Return how the installed OpenTelemetry SDK names ``error``'s type in an exception event:
    with its module in recent SDKs ("django_threadmill.exceptions.TaskTimeout"), bare in 1.20."""
    span = TracerProvider().get_tracer(__name__).start_span("probe")
    span.record_exception(error)
    span.end()
    return str(span.events[0].attributes["exception.type"])


def test_an_async_attempt_past_the_timeout_names_it(runs: dict[str, dict]) -> None:
    run = runs[FOREVER]
    assert run["outcome"] == "failed"
    assert run["status"] == "ERROR"
    assert run["description"].startswith("TaskTimeout: Task ")
    assert "ran longer than --task-timeout=0.2s" in run["description"]
    [event] = run["events"]
    assert event["attributes"]["exception.type"] == sdk_type_name(TaskTimeout("probe"))


def test_a_long_message_is_cut_in_the_description_not_in_the_event(
    runs: dict[str, dict],
) -> None:
    run = runs["long"]
    assert run["status"] == "ERROR"
    assert run["description"].startswith("ValueError: xxx")
    assert len(run["description"]) < 300
    [event] = run["events"]
    assert len(event["attributes"]["exception.message"]) > 1000


class RaisingSpan:
    """A span whose exception event a broken SDK cannot take."""

    def record_exception(self, exception: BaseException, attributes: object = None) -> None:
        raise RuntimeError("record_exception broke")


def test_a_span_that_cannot_record_the_exception_fails_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lease = Lease("task-1", "default", "token-1", task_path=FAIL)
    tracing._open_runs[lease] = tracing._OpenRun(RaisingSpan())
    try:
        finish = outcome.failed(lease, ValueError("on purpose"), 0, None)
    finally:
        run = tracing._open_runs.pop(lease)
    assert finish.outcome is Outcome.FAILED
    assert run.failure == "ValueError: on purpose"  # the status still names it
    [record] = caplog.records
    assert record.getMessage().startswith(
        f"OpenTelemetry raised while recording the exception on the span 'run {FAIL}'"
    )
    assert "record_exception broke" in caplog.text  # its traceback


def probe(folder: Path) -> None:
    """Run each failing task once, sync ones in this thread and async ones on an event loop,
    with a 0.2 s task timeout; print each run span (the long message's as "long")."""
    import asyncio

    from tests.observability.trace_probe import spans_in_memory

    exporter = spans_in_memory()

    from django_threadmill.codec.times import now_ms
    from django_threadmill.compat import task_backends
    from django_threadmill.worker.executor import Executor
    from testproject.example.tasks import fail, flaky
    from tests.worker.async_tasks import flaky as async_flaky
    from tests.worker.async_tasks import forever

    backend = task_backends["default"]
    executor = Executor("probe-worker", "default", type(backend), task_timeout_s=0.2)
    long = fail.enqueue(LONG_MESSAGE)
    enqueued = [
        fail.enqueue("on purpose"),
        flaky.enqueue(),
        async_flaky.enqueue(str(folder / "marker")),
        forever.enqueue(str(folder / "started")),
        long,
    ]
    reservations = backend.broker.acquire("default", 10).reservations
    assert len(reservations) == len(enqueued)
    for reservation in reservations:
        if reservation.lease.task_path.startswith("tests.worker.async_tasks."):
            finish = asyncio.run(executor.arun(reservation, now_ms()))
        else:
            finish = executor.run(reservation, now_ms())
        backend.broker.finish("probe-worker", [finish])
    for span in exporter.get_finished_spans():
        if not span.name.startswith("run "):
            continue  # an enqueue span
        attributes = dict(span.attributes or {})
        path = attributes["threadmill.task.path"]
        is_long = attributes["threadmill.task.id"] == long.id
        print(
            json.dumps(
                {
                    "path": "long" if is_long else path,
                    "outcome": attributes["threadmill.outcome"],
                    "status": span.status.status_code.name,
                    "description": span.status.description,
                    "events": [
                        {"name": event.name, "attributes": dict(event.attributes or {})}
                        for event in span.events
                    ],
                }
            )
        )


if __name__ == "__main__":
    probe(Path(sys.argv[1]))
