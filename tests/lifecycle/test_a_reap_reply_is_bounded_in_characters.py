"""A reap call replies with at most ``REAP_CHARS`` characters of payloads and earlier errors
(its first running attempt whatever its size), as an acquire call does, and a pass still
settles every lapsed lease: the calls after it take the rest.

Bounded in entries alone, a host's workers all dying while they ran 500 tasks of
``max_payload_bytes`` made one reap reply of 500 MiB, held in Redis and in the reaper.
"""

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, lifecycle
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.reaper import reap_once

from .support import run, wait_for_expiry
from .tasks import hang

PAYLOAD_ARGUMENT = "x" * 1_000
QUEUE = "reports"  # hang's


def lapsed_attempts(broker: Broker, redis_client: redis.Redis, count: int) -> list[str]:
    """Run ``count`` tasks with about 1,000 characters of payload each, let their leases
    lapse; return their ids."""
    ids = [hang.enqueue(PAYLOAD_ARGUMENT).id for _ in range(count)]
    run(broker, QUEUE)
    wait_for_expiry(broker, redis_client, QUEUE)
    return ids


def test_a_backlog_of_large_payloads_is_reaped_in_calls_bounded_in_characters(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lifecycle, "REAP_CHARS", 3_000)
    ids = lapsed_attempts(broker, redis_client, 5)

    first = broker.reap(QUEUE, 500, dry_run=True)
    assert first.cut_short
    assert len(first.expired) == 2  # a third would pass 3,000 characters
    assert first.looked_at == 2

    report = reap_once(backend)
    assert report.failed == 5
    assert {backend.get_result(task_id).status for task_id in ids} == {TaskResultStatus.FAILED}


def test_an_attempt_larger_than_the_bound_is_reaped_alone(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lifecycle, "REAP_CHARS", 100)
    ids = lapsed_attempts(broker, redis_client, 2)

    first = broker.reap(QUEUE, 500, dry_run=True)
    assert [attempt.lease.task_id for attempt in first.expired] in ([ids[0]], [ids[1]])
    assert first.cut_short

    assert reap_once(backend).failed == 2
