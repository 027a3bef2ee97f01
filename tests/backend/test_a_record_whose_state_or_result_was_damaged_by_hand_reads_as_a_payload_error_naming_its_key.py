"""get_result on a record whose ``state`` no script writes (``HSET … state BANANA``, or the field
deleted), or a successful one without its ``result``, raises PayloadError naming the key, what
it holds and the fix.

The first read as READY: a finished task, and a running one, said READY for good. The second
read as a success that returned None. Neither hinted that the record was damaged
(docs/lifecycle.md, Damaged records).
"""

import re

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import PayloadError
from testproject.example.tasks import echo
from tests.backend_support import start, succeed

# The state written by hand (None: the field deleted), and how the error names it.
DAMAGE = [("BANANA", "the state 'BANANA'"), (None, "no state field")]


def expected_error(task_id: str, key: str, held: str) -> str:
    """The pattern of get_result's error for a record that holds ``held``."""
    return (
        "^"
        + re.escape(
            f"Task {task_id!r} cannot be read: its record {key!r} holds {held}, so something other "
            f"than django-threadmill wrote it. Look at it (redis-cli HGETALL {key!r}), then delete "
            "it or restore the record (docs/lifecycle.md, Damaged records)."
        )
        + "$"
    )


def damage_state(client: redis.Redis, key: str, value: str | None) -> None:
    if value is None:
        assert client.hdel(key, "state") == 1
    else:
        client.hset(key, "state", value)


@pytest.mark.parametrize(("value", "held"), DAMAGE)
@pytest.mark.parametrize("phase", ["ready", "running", "successful"])
async def test_a_state_no_script_writes_is_named_with_its_key(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    phase: str,
    value: str | None,
    held: str,
) -> None:
    task_id = (await echo.aenqueue(1)).id
    if phase == "running":
        start(backend, task_id)
    elif phase == "successful":
        succeed(backend, task_id, 1)
    key = backend.broker.record_key(task_id)
    assert key is not None
    damage_state(redis_client, key, value)
    expected = expected_error(
        task_id, key, f"{held}, not one of ready, reserved, running, successful, failed"
    )

    with pytest.raises(PayloadError, match=expected):
        backend.get_result(task_id)
    with pytest.raises(PayloadError, match=expected):
        await backend.aget_result(task_id)


def test_a_success_without_its_result_is_named_with_its_key(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    task_id = echo.enqueue(1).id
    succeed(backend, task_id, 1)
    key = backend.broker.record_key(task_id)
    assert key is not None
    assert redis_client.hdel(key, "result") == 1

    held = "the state successful without a result field"
    with pytest.raises(PayloadError, match=expected_error(task_id, key, held)):
        backend.get_result(task_id)


def test_a_success_that_returned_none_reads_back(backend: ThreadmillTaskBackend) -> None:
    """Not damage: a None return value is stored, as the JSON null."""
    task_id = echo.enqueue(None).id
    succeed(backend, task_id, None)

    result = backend.get_result(task_id)

    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value is None
