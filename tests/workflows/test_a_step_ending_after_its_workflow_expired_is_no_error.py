"""A step still running when its workflow ended ends after the workflow's hash expired
(``result_ttl`` shorter than the step): its drain finds no workflow, which is no error
(docs/workflows.md, Semantics: Expiry)."""

import logging

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Outcome
from django_threadmill.codec.jsoncodec import dumps
from django_threadmill.workflows import advance, group, step
from tests.backend_support import fail, finish, start
from tests.support import wait_until

from .tasks import boom, collect, number


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"result_ttl": 1}  # seconds: the ended workflow's hash is polled until it expires


def test_a_member_ending_after_its_failed_workflow_expired_logs_no_error(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    flow = group(step(number, 1), step(boom, 2), then=step(collect)).enqueue()
    running, failing = (s.task_id for s in flow.steps[:2])
    lease = start(backend, running)  # still runs when the other member fails
    fail(backend, failing, ValueError("down"))
    assert advance.drain_queues(backend, ["default"]) == 1  # the workflow FAILED
    workflow_key = backend.broker.keyspace.workflow(flow.id)
    wait_until(lambda: not redis_client.exists(workflow_key), "the ended workflow's expiry")

    finish(backend, lease, Outcome.SUCCESSFUL, dumps(1))
    with caplog.at_level(logging.DEBUG, logger="django_threadmill"):
        assert advance.drain_queues(backend, ["default"]) == 0

    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert (
        f"Workflow of a step is gone, nothing more is enqueued from it: it ended more than "
        f"result_ttl ago while this step was enqueued or running, or its launch was "
        f"interrupted before it marked its first steps workflow_id={flow.id} "
        f"task_id={running}"
    ) in caplog.text
    keys = backend.broker.queue_keys("default")
    assert redis_client.llen(keys.outbox) == 0
    assert redis_client.pttl(backend.broker.record_key(running)) > 0  # its result_ttl began
