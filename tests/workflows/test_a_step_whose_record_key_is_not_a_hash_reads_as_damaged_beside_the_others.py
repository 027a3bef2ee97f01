"""A step whose record key holds another Redis type than a hash (written by hand, or damaged),
or a record of bytes that are not UTF-8, reads as DAMAGED with the ``PayloadError`` message
``get_result`` raises for it, and the other steps read as usual: ``get_workflow`` and its async
twin raised that error for the whole workflow (docs/workflows.md, The API)."""

import asyncio

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import PayloadError
from django_threadmill.workflows import aget_workflow, get_workflow, group, step

from .tasks import number


def damage(raw_client: redis.Redis, key: str, how: str) -> None:
    """Write the record ``key`` as something other than django-threadmill would."""
    if how == "a string":
        raw_client.delete(key)
        raw_client.set(key, "another program's value")
    else:  # a hash, one of whose values is not UTF-8
        raw_client.hset(key, "payload", b"\xff\xfe")


@pytest.mark.parametrize("how", ["a string", "bytes not UTF-8"])
def test_get_and_aget_workflow_read_that_step_as_damaged_and_the_others_as_usual(
    backend: ThreadmillTaskBackend, raw_client: redis.Redis, how: str
) -> None:
    flow = group(step(number, 1), step(number, 2), step(number, 3)).enqueue()
    key = backend.broker.record_key(flow.steps[1].task_id)
    assert key is not None
    damage(raw_client, key, how)
    with pytest.raises(PayloadError) as raised:
        backend.get_result(flow.steps[1].task_id)
    assert key in str(raised.value)

    for found in (get_workflow(flow.id), asyncio.run(aget_workflow(flow.id))):
        first, bad, last = found.steps
        assert (bad.state, bad.task_status, bad.result, bad.unreadable) == (
            "DAMAGED",
            None,
            None,
            str(raised.value),
        )
        for other in (first, last):
            assert (other.state, other.unreadable) == ("READY", "")
            assert other.result is not None
            assert other.result.id == other.task_id
        assert found.status == TaskResultStatus.READY
