"""A worker host whose wall clock is ten minutes off Redis's, met with a real worker process:
every time that decides something is on the Redis clock (docs/design.md, One clock).

A delayed task starts no sooner than its ``run_after`` by Redis, a retry no sooner than its
delay after the failed attempt, the reaper leaves the live lease alone, ``threadmill_health``
counts the process live, and the progress report and the done index are dated by Redis. Each
bound is a "not before" or "not after" between two Redis times read around the event, so the
test waits on nothing and times nothing.
"""

import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.broker.inspect import Inspector
from django_threadmill.compat import TaskContext, TaskResultStatus, task_backends
from django_threadmill.management.health import host_heartbeats
from django_threadmill.progress import progress_of, report_progress
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task
from tests.lifecycle.test_paused_workers_and_skewed_clocks import skewed_env
from tests.support import Command, wait_until

SKEW_S = 600
RETRY_DELAY = timedelta(seconds=1)
RUN_AFTER_MS = 1500


def _redis_ms() -> int:
    backend = task_backends["default"]
    assert isinstance(backend, ThreadmillTaskBackend)
    return backend.broker.server_time_ms()


@task(
    takes_context=True,
    retry=ExponentialBackoff(base_delay=RETRY_DELAY, jitter=0, max_attempts=2),
)
def stamped(context: TaskContext, marker: str) -> str:
    """Append Redis's time at this attempt's start and end to ``marker``; the first attempt
    raises (to be retried), the second reports progress and returns."""
    started_ms = _redis_ms()
    first = context.attempt == 1
    if not first:
        report_progress(context, 1, 1, "done")
    with Path(marker).open("a") as lines:
        lines.write(f"{started_ms} {_redis_ms()}\n")
    if first:
        raise ConnectionError("first attempt fails")
    return "done"


def _stamps(marker: Path) -> list[tuple[int, int]]:
    return [
        (int(start), int(end))
        for start, end in (line.split() for line in marker.read_text().splitlines())
    ]


@pytest.mark.parametrize("skew_s", [SKEW_S, -SKEW_S], ids=["ahead", "behind"])
def test_a_worker_whose_clock_is_off_decides_every_time_on_the_redis_clock(
    skew_s: int,
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    start_worker: Callable[..., Command],
    tmp_path: Path,
) -> None:
    marker = tmp_path / "attempts"
    before_ms = broker.server_time_ms()
    due_ms = before_ms + RUN_AFTER_MS
    run_after = datetime.fromtimestamp(due_ms / 1000, UTC)
    result = stamped.using(run_after=run_after).enqueue(str(marker))
    worker = start_worker(
        "--threads", "1", "--reap-interval", "0.2", lease_ttl_s=1.0,
        extra_env=skewed_env(tmp_path, skew_s),
    )  # fmt: skip
    inspector = Inspector(broker)
    wait_until(
        lambda: host_heartbeats(inspector, ["default"], socket.gethostname(), 1000).live,
        "threadmill_health counting the skewed worker live",
    )
    wait_until(lambda: marker.exists() and len(_stamps(marker)) == 2, "two attempts")
    wait_until(
        lambda: backend.get_result(result.id).status == TaskResultStatus.SUCCESSFUL,
        "the task SUCCESSFUL",
    )
    done_key = broker.queue_keys("default").done
    wait_until(lambda: redis_client.zscore(done_key, result.id) is not None, "the done index")
    after_ms = broker.server_time_ms()
    worker.signal()
    assert worker.wait(60) == 0, worker.log

    (first_start, first_end), (second_start, _) = _stamps(marker)
    assert first_start >= due_ms, "run before its run_after by the Redis clock"
    assert second_start >= first_end + RETRY_DELAY.total_seconds() * 1000, "retried early"
    assert "LeaseExpired" not in worker.log
    final = backend.get_result(result.id)
    assert final.enqueued_at is not None
    assert final.started_at is not None
    # The skew is in force: started_at is the worker's clock, enqueued_at Redis's.
    offset_s = (final.started_at - final.enqueued_at).total_seconds()
    assert abs(offset_s - skew_s) < 60, (final.enqueued_at, final.started_at)
    progress = progress_of(final)
    assert progress is not None
    reported_ms = progress.reported_at.timestamp() * 1000
    assert second_start - 1 <= reported_ms <= after_ms
    done_score = redis_client.zscore(done_key, result.id)
    assert done_score is not None
    assert second_start <= done_score <= after_ms
