"""Task errors never kill a worker thread, and bad payloads become FAILED (docs/worker.md)."""

from collections.abc import Callable

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from tests.support import Command
from tests.worker import tasks


def test_system_exit_and_keyboard_interrupt_are_recorded_and_the_thread_lives_on(
    start_worker: Callable[..., Command],
) -> None:
    exiting = tasks.exit_now.enqueue()
    interrupted = tasks.interrupt.enqueue()
    after = [tasks.square.enqueue(n) for n in range(5)]

    worker = start_worker("--threads", "1", "--burst")
    assert worker.wait() == 0, worker.log

    exiting.refresh()
    interrupted.refresh()
    assert exiting.status == TaskResultStatus.FAILED
    assert exiting.errors[0].exception_class_path == "builtins.SystemExit"
    assert interrupted.errors[0].exception_class_path == "builtins.KeyboardInterrupt"
    for result in after:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL


def plant(broker: Broker, redis_client: redis.Redis, task_id: str, payload: str) -> None:
    """Write a ready task record by hand, as corruption or a foreign writer would."""
    keys = broker.queue_keys("default")
    redis_client.hset(
        keys.record(task_id),
        mapping={"payload": payload, "state": "ready", "score": 1, "token": 0, "nerrors": 0},
    )
    redis_client.zadd(keys.ready, {task_id: 1})


def test_corrupt_payloads_and_non_task_paths_become_failed_and_the_worker_carries_on(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    start_worker: Callable[..., Command],
) -> None:
    plant(broker, redis_client, "garbage@default", "{not json")
    plant(broker, redis_client, "missing@default", '{"path": "no.such.module.task"}')
    plant(broker, redis_client, "system@default", '{"path": "os.system", "args": ["true"]}')
    raising = '{"path": "tests.raises_at_import.task"}'
    plant(broker, redis_client, "raising@default", raising)
    plant(broker, redis_client, "exiting@default", '{"path": "tests.exits_at_import.task"}')
    square = '{"path": "tests.worker.tasks.square", "args": [2], '
    plant(broker, redis_client, "priority@default", square + '"priority": "high"}')
    plant(broker, redis_client, "range@default", square + '"priority": 500}')
    after = tasks.square.enqueue(7)

    worker = start_worker("--burst")
    assert worker.wait() == 0, worker.log

    expected = {
        "garbage@default": "Stored payload is not valid JSON",
        "missing@default": "Task path 'no.such.module.task' does not import",
        "system@default": "'os.system' is a builtin_function_or_method, not a task",
        "raising@default": (
            "Task path 'tests.raises_at_import.task' does not import (its module raised "
            "RuntimeError: settings.PAYMENT_API_KEY is not set)"
        ),
        "exiting@default": (
            "Task path 'tests.exits_at_import.task' does not import (its module raised "
            "SystemExit: 2)"
        ),
        "priority@default": "has priority='high' and run_after_ms=None",
        "range@default": "'tests.worker.tasks.square' cannot run as stored (priority must be",
    }
    for task_id, message in expected.items():
        record = broker.record(task_id)
        assert record is not None
        assert record["state"] == "failed"
        assert message in record["error:1"]
        assert f"Task failed task_id={task_id}" in worker.log
    after.refresh()
    assert after.return_value == 49
