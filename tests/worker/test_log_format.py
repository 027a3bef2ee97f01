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


def test_the_system_checks_and_a_refused_option_are_json_lines_too(
    start_worker: Callable[..., Command],
) -> None:
    """The system checks' block ("System check identified some issues:", "WARNINGS:", each
    issue and its hint) and a refused option's "CommandError: ..." were plain lines among the
    JSON ones: a collector reading the output line by line took each for a broken entry."""
    warned = start_worker(
        "--burst", "--log-format", "json", options={"queue_shards": {"default": 2}}
    )
    assert warned.wait() == 0, warned.log
    refused = start_worker("--log-format", "json", "--processes", "-1")
    assert refused.wait() == 1, refused.log

    entries = [json.loads(line) for line in warned.log.splitlines() if line.strip()]
    [shards] = [e for e in entries if "(threadmill.W005)" in e["message"]]
    assert shards["level"] == "WARNING"
    assert "\n\tHINT: Shard a queue on a Redis Cluster" in shards["message"]
    [*_, error] = [json.loads(line) for line in refused.log.splitlines() if line.strip()]
    assert error["level"] == "ERROR"
    assert error["message"] == "CommandError: --processes must be 0 or more, got -1."
    assert {"time", "logger", "pid", "thread"} <= error.keys()
