"""A queue whose keys Redis cannot serve does not keep the reaper from the other queues."""

import logging

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.worker.reaper import reap_once

from .support import run, wait_for_expiry
from .tasks import plain


def test_a_key_of_another_type_in_one_queue_leaves_the_other_queues_reaped(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Queues are reaped in name order: a "default" whose leases key another program
    overwrote failed every pass before "emails" was reached, so the leases of workers that
    died there stayed held, their tasks RUNNING, until someone deleted the key."""
    task_id = plain.using(queue_name="emails").enqueue().id
    assert len(run(broker, "emails")) == 1
    wait_for_expiry(broker, redis_client, "emails")
    leases = broker.queue_keys("default").leases
    redis_client.set(leases, "not a zset")

    with (
        caplog.at_level(logging.WARNING, logger="django_threadmill.worker.reaper"),
        pytest.raises(BrokerUnavailable, match="wrong kind"),
    ):
        reap_once(backend)

    assert backend.get_result(task_id).status == TaskResultStatus.FAILED
    assert redis_client.zcard(broker.queue_keys("emails").leases) == 0
    [logged] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Reap of")]
    assert logged.startswith(
        "Reap of a queue failed, the others go on queue=default error=Redis at "
    )
