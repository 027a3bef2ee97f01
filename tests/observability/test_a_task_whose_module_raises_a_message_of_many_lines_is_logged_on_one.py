"""A task whose module raises as it is imported is logged FAILED on one line: the line break in
the module's message is escaped, as in a task's own error, not ending the line and forging the
next (docs/observability.md, Logging)."""

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from tests.support import worker

PATH = "tests.observability.raises_a_two_line_error_at_import.task"


def test_the_failure_line_keeps_the_modules_message_on_it(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
) -> None:
    keys = broker.queue_keys("default")
    redis_client.hset(
        keys.record("raising@default"),
        mapping={
            "payload": f'{{"path": "{PATH}"}}',
            "state": "ready",
            "score": 1,
            "token": 0,
            "nerrors": 0,
        },
    )
    redis_client.zadd(keys.ready, {"raising@default": 1})
    command = worker(redis_url, key_prefix, "--burst")
    try:
        assert command.wait(60) == 0, command.log
        log = command.log
    finally:
        command.close()

    [line] = [line for line in log.splitlines() if "forged line" in line]
    assert "Task failed task_id=raising@default " in line
    assert "API_KEY is not set\\x0aINFO forged line" in line
