"""threadmill_reap sets up its logging as the worker does, whatever the project's LOGGING routes.

The project here has a fresh project's LOGGING (the root logger on the console, at WARNING),
which leaves ``django_threadmill`` alone: without the command's own setup its start, pass and
stop lines were dropped, and its warnings and errors came out bare.
"""

import json
import re
import signal

import pytest
import redis

from django_threadmill.broker import Broker
from tests.support import Command, run_to_completion

from .support import run, wait_for_expiry
from .tasks import plain

FRESH_PROJECT = {"DJANGO_SETTINGS_MODULE": "testproject.settings_fresh"}
# A looping pass runs in a thread of its own, so a stop need not wait for it.
PREFIX = (
    r"^\S+ \S+ (?P<level>[A-Z]+) django_threadmill\.worker\.reaper pid=\d+ "
    r"(?:MainThread|threadmill-wait-reap) "
)


def reaper_lines(log: str) -> list[tuple[str, str]]:
    """Return (level, message) of each key=value line the reaper logged, in order."""
    return [(m["level"], m["message"]) for m in re.finditer(PREFIX + "(?P<message>.*)$", log, re.M)]


@pytest.fixture
def expired(broker: Broker, redis_client: redis.Redis) -> str:
    """One running attempt whose lease has lapsed; return its task id."""
    task_id = plain.enqueue().id
    run(broker)
    wait_for_expiry(broker, redis_client)
    return task_id


def test_the_loop_logs_start_each_pass_and_stop_in_key_value_lines(
    redis_url: str, key_prefix: str, expired: str
) -> None:
    loop = Command(
        redis_url, key_prefix, "threadmill_reap", "--interval", "0.05", extra_env=FRESH_PROJECT
    )
    try:
        loop.wait_for_log("Reap pass dry_run=False released=0 failed=1 ")
        loop.signal(signal.SIGTERM)
        assert loop.wait() == 0, loop.log
        log = loop.log
    finally:
        loop.close()
    *lines, (stopped_level, stopped) = reaper_lines(log)
    assert lines == [
        ("INFO", "Reaper started backend=default interval_s=0.05 batch_size=500"),
        ("ERROR", f"Lease expired, task FAILED task_id={expired} worker=test-worker-1"),
        (
            "INFO",
            "Reap pass dry_run=False released=0 failed=1 retried=0 stale=0 set_aside=0 "
            "workflow_steps_advanced=0",
        ),
        ("INFO", "Reaper stopping signal=SIGTERM"),
    ]
    assert stopped_level == "INFO"
    assert re.fullmatch(r"Reaper stopped backend=default passes=\d+ failed_passes=0", stopped), (
        stopped
    )


def test_verbosity_0_keeps_the_errors_only(redis_url: str, key_prefix: str, expired: str) -> None:
    once = Command(
        redis_url, key_prefix, "threadmill_reap", "--once", "-v", "0", extra_env=FRESH_PROJECT
    )
    log = run_to_completion(once)
    assert reaper_lines(log) == [
        ("ERROR", f"Lease expired, task FAILED task_id={expired} worker=test-worker-1")
    ]


def test_json_log_format_writes_one_object_per_line(
    redis_url: str, key_prefix: str, expired: str
) -> None:
    once = Command(
        redis_url,
        key_prefix,
        "threadmill_reap",
        "--once",
        "--log-format",
        "json",
        extra_env=FRESH_PROJECT,
    )
    log = run_to_completion(once)
    # Every line: the system checks' W001 (the throwaway Redis keeps no AOF) and the command's
    # report of each queue were plain lines.
    everything = [json.loads(line) for line in log.splitlines()]
    entries = [e for e in everything if e["logger"] == "django_threadmill.worker.reaper"]
    assert [(entry["level"], entry["logger"]) for entry in entries] == [
        ("ERROR", "django_threadmill.worker.reaper"),
        ("INFO", "django_threadmill.worker.reaper"),
    ]
    assert entries[0]["message"].startswith(f"Lease expired, task FAILED task_id={expired} ")
    assert entries[1]["message"].startswith("Reap pass dry_run=False released=0 failed=1 ")
    [settled] = [e for e in everything if e["message"].startswith("Settled queue=default ")]
    assert settled["message"].startswith("Settled queue=default released=0 failed=1 retried=0")
    assert settled["level"] == "INFO"
