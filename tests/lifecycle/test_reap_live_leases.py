"""The reaper leaves live leases alone: a reservation or an attempt within lease_ttl."""

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from django_threadmill.worker.reaper import reap_once

from .support import ack, reserve, run
from .tasks import plain


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"lease_ttl": 3600}  # nothing expires during these tests


def test_live_reservations_and_attempts_are_left_alone(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    running = plain.enqueue().id
    [lease] = run(broker)
    reserved = plain.enqueue().id
    reserve(broker)

    report = reap_once(backend)

    assert (report.released, report.failed, report.retried) == (0, 0, 0)
    assert redis_client.zcard(broker.queue_keys("default").leases) == 2
    assert backend.get_result(running).status == TaskResultStatus.RUNNING
    assert backend.get_result(reserved).status == TaskResultStatus.READY
    assert ack(broker, lease)
