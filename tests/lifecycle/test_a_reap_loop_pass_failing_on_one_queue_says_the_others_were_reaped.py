"""``threadmill_reap``'s loop, when a pass fails on one queue while Redis answers (a key of
another type there: docs/lifecycle.md, Keys of another type), says which queue failed and that
the others were reaped, then that it retries, as ``--once`` and a worker's supervisor say it.

Before, it logged ``Reap pass failed, retrying next interval error=Reap of queue emails failed,
the other queues were reaped: …``: its opening words said the pass failed, as of a pass Redis
did not answer, when the other queues' dead workers' tasks were settled.
"""

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from tests.support import Command, running, wait_until

from .support import run
from .tasks import plain


def test_the_loop_names_the_failed_queue_and_reaps_the_others(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
) -> None:
    task_id = plain.enqueue().id
    run(broker)  # as a worker that died would have
    redis_client.set(broker.queue_keys("emails").leases, "not a zset")
    loop = Command(redis_url, key_prefix, "threadmill_reap", "--interval", "0.05", lease_ttl_s=1.0)
    said = (
        r"Reap of queue emails failed, the other queues were reaped, retrying next interval "
        r"error=Redis at \S+ holds a value of the wrong kind|Reap pass failed"
    )
    with running(loop, ready=said):
        wait_until(
            lambda: backend.get_result(task_id).status == TaskResultStatus.FAILED,
            "the loop failing the expired attempt in default",
        )
        assert "Reap pass failed" not in loop.log, loop.log
