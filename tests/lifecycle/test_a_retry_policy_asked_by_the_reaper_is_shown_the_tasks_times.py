"""A retry policy asked by the reaper (its attempt's worker went silent) is shown the task's
enqueue and start times, as one asked by a worker is: a policy that gives up a day after the
enqueue read None there, and raised, so the reaper failed a task the worker would retry."""

from collections.abc import Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.reaper import reap_once

from .seen_by_policies import SHOWN, shows_its_policy
from .support import run, wait_for_expiry


@pytest.fixture(autouse=True)
def nothing_shown_yet() -> Iterator[None]:
    SHOWN.clear()
    yield
    SHOWN.clear()


def test_the_reapers_policy_call_sees_when_the_task_was_enqueued_and_started(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = shows_its_policy.enqueue().id
    seen = []
    for worker in ("test-worker-1", "test-worker-2"):  # the second attempt starts again
        run(broker, worker=worker)
        running = backend.get_result(task_id)
        assert running.status == TaskResultStatus.RUNNING
        seen.append(running)
        wait_for_expiry(broker, redis_client)
        assert reap_once(backend).retried == 1

    assert [shown.attempts for shown in SHOWN] == [1, 2]
    for shown, running in zip(SHOWN, seen, strict=True):
        assert shown.id == task_id
        assert shown.enqueued_at == running.enqueued_at is not None
        assert shown.started_at == running.started_at is not None
        assert shown.last_attempted_at == running.last_attempted_at is not None
    assert SHOWN[1].started_at == SHOWN[0].started_at != SHOWN[1].last_attempted_at


def test_a_time_written_by_hand_that_is_not_utf8_reads_as_none(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    """A display time is no reason to set the record aside as damaged."""
    task_id = shows_its_policy.enqueue().id
    run(broker)
    key = broker.record_key(task_id)
    assert key is not None
    redis_client.hset(key, "started_ms", b"\xff")
    wait_for_expiry(broker, redis_client)

    report = reap_once(backend)

    assert (report.retried, report.set_aside) == (1, 0)
    [shown] = SHOWN
    assert (shown.started_at, shown.last_attempted_at) == (None, None)
    assert shown.enqueued_at is not None
