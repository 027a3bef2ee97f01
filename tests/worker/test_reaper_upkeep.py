"""Each reap pass trims the done index of every queue, not only of queues that just finished
something: an idle queue's index kept the ids of expired records until its next outcome, and a
queue whose tasks were only cancelled kept them for good."""

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.worker.reaper import reap_once


def test_a_reap_pass_trims_every_queues_done_index(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    broker = backend.broker
    seconds, _ = redis_client.time()
    for queue in ("default", "emails"):  # nothing tallied for either
        done = broker.queue_keys(queue).done
        redis_client.zadd(done, {"finished-long-ago": 0, "finished-now": int(seconds) * 1000})
    reap_once(backend)
    for queue in ("default", "emails"):
        assert redis_client.zrange(broker.queue_keys(queue).done, 0, -1) == ["finished-now"]
    assert not broker.tally  # the trims left nothing to send again
