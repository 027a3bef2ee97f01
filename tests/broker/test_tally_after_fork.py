"""A forked child starts with empty metric tallies: what its parent counted is the parent's to
send. The supervisor's reap passes count expired leases in its broker's tally; when a send
failed, a worker process forked next inherited those counts and sent them too, so Redis counted
them twice."""

import os
from collections.abc import Callable

import redis

from django_threadmill.broker import Broker, Lease
from django_threadmill.broker.keys import QueueKeys

from .conftest import WORKER, finish


def test_a_forked_child_sends_none_of_its_parents_unsent_counts(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    assert broker.finish(WORKER, [finish(reserve())]) == []  # counted, not yet sent
    pid = os.fork()
    if pid == 0:  # the child: send what it holds, as a worker process does within a second
        try:
            broker.send_metrics()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert redis_client.hgetall(keys.stats) == {}  # the child had nothing to send

    broker.send_metrics()

    assert redis_client.hgetall(keys.stats) == {"successful": "1"}  # once, by the parent
