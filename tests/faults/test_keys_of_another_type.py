"""A queue's leases key overwritten by another program: the worker says which key to delete,
and once it is deleted every task runs.

Before, each fetch the worker retried moved a batch out of ``ready`` into state reserved and
then failed on the lease ``ZADD``: Redis keeps what a failed script wrote, so those tasks sat in
no index, READY to ``get_result`` for good (docs/lifecycle.md, Keys of another type).
"""

from collections import Counter
from pathlib import Path

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from tests.support import running, wait_until, worker

from .support import all_successful, enqueue_counted, executions, states

TASKS = 20


def test_a_worker_fetching_over_a_leases_key_of_another_type_moves_no_task(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    log = tmp_path / "runs.log"
    results = enqueue_counted(backend, log, TASKS)
    keys = backend.broker.queue_keys("default")
    redis_client.set(keys.leases, "another program's value")

    with running(worker(redis_url, key_prefix, "--threads", "2")) as command:
        # The worker serves three queues: the others go on, this one is asked again later.
        refused = command.wait_for_log(
            r"Fetch from a queue failed, the others go on queue=default retry_in_s=\S+ error=(.*)"
        )
        assert redis_client.zcard(keys.ready) == TASKS
        assert states(redis_client, backend.broker, results) == Counter({"ready": TASKS})
        assert "holds a value of the wrong kind in one of this backend's keys" in refused[1]
        assert f"in {keys.leases}). " in refused[1]
        assert "delete that key" in refused[1]

        redis_client.delete(keys.leases)
        wait_until(lambda: all_successful(results), "every task SUCCESSFUL", timeout_s=30)

    assert executions(log) == {result.id: 1 for result in results}
