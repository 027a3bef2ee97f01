"""A worker supervisor's reap pass that fails on one queue while Redis answers (a key of another
type there: docs/lifecycle.md, Keys of another type) says which queue failed and that the
others were reaped, as ``threadmill_reap`` does.

Before, it logged ``Reap pass failed error=…``, as for a pass Redis did not answer at all: an
operator read that nothing was reaped, when the other queues' dead workers' tasks were settled.
"""

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import echo
from tests.lifecycle.support import run
from tests.support import running, worker


def test_the_supervisor_names_the_failed_queue_and_the_others_are_reaped(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
) -> None:
    result = echo.enqueue(1)
    [lease] = run(broker)  # as a worker that died would have
    leases = broker.queue_keys("default").leases
    redis_client.zadd(leases, {lease.task_id: broker.server_time_ms() - 1000}, xx=True)
    redis_client.set(broker.queue_keys("emails").leases, "not a zset")
    command = worker(
        redis_url, key_prefix, "--queue", "reports", "--reap-interval", "1", lease_ttl_s=1.0
    )
    said = (
        r"Reap of queue emails failed, the other queues were reaped error=Redis at \S+ "
        r"holds a value of the wrong kind|Reap pass failed error="
    )
    with running(command, ready=said):
        assert "Reap pass failed" not in command.log, command.log
    assert backend.get_result(result.id).status == TaskResultStatus.FAILED
