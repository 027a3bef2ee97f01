"""A process serving a queue with a limit keeps no task whose module failed to import once it
ended (docs/worker.md, Memory a process keeps).

Such a process notes the lane (threads, event loop) each queue's tasks take, and keeps a task
whose lane only an import can tell until a worker thread sorted it. A module that fails to
import never tells it, and a failed import is not remembered, so each such task, its payload
too, was kept for the life of the process: a deploy that left a task module out grew every
worker by one reservation per task.
"""

import gc
import json
from collections.abc import Callable

import redis

from django_threadmill.broker import Broker, Reservation
from django_threadmill.compat import TaskResultStatus, task
from tests.support import Command, running, wait_until

TASKS = 2000
THREADS, PREFETCH = 2, 10
# A concurrency limit on another queue: the process then notes the lanes of every queue's tasks.
LIMITED = {"queue_limits": {"emails": {"concurrency": 2}}}
RAISING_PATH = "tests.raises_at_import.task"  # its module raises as it is imported


@task
def reservations_alive() -> int:
    """Return how many reserved tasks the worker process holds in memory, this one included."""
    gc.collect()
    return sum(isinstance(found, Reservation) for found in gc.get_objects())


def plant_ready(broker: Broker, client: redis.Redis, count: int) -> None:
    """Write ``count`` ready tasks of a module that raises at import, as an enqueue from code
    the workers were not deployed with leaves them; each with arguments of its own."""
    keys = broker.queue_keys("default")
    pipe = client.pipeline(transaction=False)
    for n in range(count):
        task_id = f"raising{n}@default"
        payload = json.dumps({"path": RAISING_PATH, "args": [n, "x" * 100]})
        record = {"payload": payload, "state": "ready", "score": 1, "token": 0, "nerrors": 0}
        pipe.hset(keys.record(task_id), mapping=record)
        pipe.zadd(keys.ready, {task_id: 1})
    pipe.execute()


def test_tasks_whose_module_failed_to_import_are_not_kept_once_they_ended(
    broker: Broker, redis_client: redis.Redis, start_worker: Callable[..., Command]
) -> None:
    plant_ready(broker, redis_client, TASKS)
    keys = broker.queue_keys("default")
    one_process = ("--threads", str(THREADS), "--prefetch", str(PREFETCH))
    command = start_worker(*one_process, "--queue", "default", "--queue", "emails", options=LIMITED)
    with running(command):
        wait_until(
            lambda: redis_client.zcard(keys.ready) == 0 and redis_client.zcard(keys.leases) == 0,
            f"the {TASKS} tasks ran",
        )
        probe = reservations_alive.enqueue()
        wait_until(lambda: probe.refresh() or probe.is_finished, "the probe ran")
    assert probe.status == TaskResultStatus.SUCCESSFUL, probe.errors
    failed = redis_client.hget(keys.record(f"raising{TASKS - 1}@default"), "state")
    assert failed == "failed"
    # The probe, and what the read-ahead and the threads may still hold of the last refill.
    assert probe.return_value <= 1 + PREFETCH + THREADS
