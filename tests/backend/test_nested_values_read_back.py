"""Arguments nested as deep as enqueue takes them read back from any caller's stack.

JSON decodes in C, so a stored payload reads back without Python recursion; what was read is
JSON already, and is not walked again. Before, ``get_result`` walked it once more in Python:
arguments enqueued from a shallow stack raised a bare ``RecursionError`` when read from a
deeper one (a view under its middleware, ``aget_result`` under ``asyncio.run``).
"""

import json

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult
from testproject.example.tasks import echo
from tests.backend.conftest import Read

DEEP = 900  # as deep as enqueue takes from a test's stack (a script's top level takes ~990)


def nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def beneath(frames: int, read: Read, result_id: str) -> TaskResult:
    """Call ``read`` with ``frames`` more frames on the stack, as a view or a template would."""
    if frames:
        return beneath(frames - 1, read, result_id)
    return read(result_id)


def test_arguments_nested_as_deep_as_enqueue_takes_read_back_from_a_deep_stack(
    read: Read,
) -> None:
    value = nested(DEEP)
    enqueued = echo.enqueue(value, key=value)
    result = beneath(200, read, enqueued.id)
    assert (result.args, result.kwargs) == ([value], {"key": value})


def test_a_payload_json_can_decode_reads_back_however_deep(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, read: Read
) -> None:
    task_id = echo.enqueue(1).id
    key = backend.broker.record_key(task_id)
    assert key is not None
    value = nested(1200)  # deeper than Python's recursion limit; json decodes it in C
    payload = {"path": echo.module_path, "args": [value], "kwargs": {}, "priority": 0}
    redis_client.hset(key, "payload", json.dumps({**payload, "run_after_ms": None}))
    assert read(task_id).args == [value]
