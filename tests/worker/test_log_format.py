"""--log-format json writes one JSON object per log line, with the worker's key=value message."""

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from tests.support import Command
from tests.worker import tasks


def test_json_log_lines_parse_and_carry_the_start_and_failure_lines(
    start_worker: Callable[..., Command],
) -> None:
    failing = tasks.exit_now.enqueue()
    worker = start_worker("--burst", "--log-format", "json")
    assert worker.wait() == 0, worker.log

    entries = [json.loads(line) for line in worker.log.splitlines() if line.startswith("{")]
    messages = [entry["message"] for entry in entries]
    assert any(message.startswith("Worker process started worker_id=") for message in messages)
    # Ours: Django's own failure line is JSON too where a handler prints it (the backport's).
    [failure] = [e for e in entries if e["level"] == "ERROR" and e["logger"] != "django_tasks"]
    assert failure["message"].startswith(f"Task failed task_id={failing.id}")
    assert failure["logger"] == "django_threadmill.worker.executor"
    assert {"time", "pid", "thread"} <= failure.keys()


def test_a_json_lines_time_says_its_offset_from_utc(start_worker: Callable[..., Command]) -> None:
    """A collector reads the time as it is written: local time without its offset (Django
    sets it from TIME_ZONE) read hours off where the collector's zone differs, and the same hour
    twice across a fall-back of daylight saving time."""
    worker = start_worker("--burst", "--log-format", "json")
    assert worker.wait() == 0, worker.log

    [started] = [
        json.loads(line)
        for line in worker.log.splitlines()
        if line.startswith("{") and "Worker process started" in line
    ]
    written = datetime.fromisoformat(started["time"])
    assert written.utcoffset() == timedelta(0)
    assert abs(written - datetime.now(UTC)) < timedelta(minutes=10)
