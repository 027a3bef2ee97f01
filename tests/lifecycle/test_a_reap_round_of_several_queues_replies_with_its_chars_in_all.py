"""One reap round replies with at most ``REAP_CHARS`` of payloads and earlier errors across
every queue and shard it reaps (each call its first lapsed attempt whatever its size), and a
pass still settles every lapsed lease: the rounds after it take the rest.

Each reap call of a round had the whole budget to itself: a host whose workers all died while
they ran tasks of large payloads in fifty queues made the supervisor's reaper hold fifty times
16 MiB in one round.
"""

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Reaped, lifecycle
from django_threadmill.compat import TaskResultStatus, task
from django_threadmill.worker.reaper import reap_once

from .support import run, wait_for_expiry

QUEUES = ("default", "emails", "reports")
BUDGET = 5_000  # REAP_CHARS for this test: a few attempts of about 1,000 characters


@task
def carry(ballast: str) -> int:
    """A task whose payload is as large as ``ballast``; never run here (its lease lapses)."""
    return len(ballast)


def test_a_round_of_several_queues_shares_one_budget(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lifecycle, "REAP_CHARS", BUDGET)
    ids = [
        carry.using(queue_name=queue).enqueue("x" * 1000).id for queue in QUEUES for _ in range(4)
    ]
    for queue in QUEUES:
        run(broker, queue)
        wait_for_expiry(broker, redis_client, queue)

    replies = broker.reap_each(QUEUES, 500, dry_run=True)

    reaped = [reply for reply in replies if isinstance(reply, Reaped)]
    assert len(reaped) == len(QUEUES)
    chars = sum(
        len(attempt.payload) + sum(map(len, attempt.errors))
        for reply in reaped
        for attempt in reply.expired
    )
    assert chars <= BUDGET, f"{chars} characters in one round"
    assert all(reply.expired for reply in reaped)  # each queue its first attempt
    assert reap_once(backend).failed == len(ids)
    assert {backend.get_result(task_id).status for task_id in ids} == {TaskResultStatus.FAILED}
