"""A purge of one state resumes where it was when the result it resumes after is requeued and
finishes again meanwhile (an operator's retry in the admin during a long purge).

Before, each batch resumed at the rank of that kept result: finished again, it sat at the end
of the done index, so the purge looked past every result left between, said it was done, and
left them all undeleted.
"""

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Outcome
from django_threadmill.codec.times import now_ms

from .support import ack, run
from .tasks import plain

SUCCESSFUL = 6
BATCH = 2


def test_a_purge_deletes_every_result_after_a_kept_one_finished_again(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    for _ in range(SUCCESSFUL + 1):
        plain.enqueue()
    leases = run(broker)
    failed, successful = leases[0], leases[1:]
    assert ack(broker, failed, Outcome.FAILED)
    for lease in successful:
        assert ack(broker, lease)
    done = broker.queue_keys("default").done
    # The failed result oldest, then the successful ones, a second apart: the order of their
    # finishes, by hand, each well before the failed one finishes again.
    earlier_ms = now_ms() - 60_000
    redis_client.zadd(
        done, {lease.task_id: earlier_ms + n * 1000 for n, lease in enumerate(leases)}
    )

    batches = broker.purge_batches("default", state="successful", batch_size=BATCH)
    deleted = next(batches) + next(batches)  # the failed result kept; 3 successful deleted
    assert backend.requeue(failed.task_id)
    [again] = run(broker)
    assert ack(broker, again, Outcome.FAILED)  # finished again: now the newest in the index
    deleted += sum(batches)

    assert deleted == SUCCESSFUL
    assert redis_client.zrange(done, 0, -1) == [failed.task_id]
