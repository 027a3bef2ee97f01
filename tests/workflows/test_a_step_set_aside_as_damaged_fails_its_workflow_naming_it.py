"""A workflow step whose record was damaged while it waited in its queue, or while it ran, is
set aside by the script that meets it (docs/lifecycle.md, Damaged records): it never runs nor
ends, so it reaches its queue's outbox in the call that sets it aside, and the drainer fails
its workflow naming the step (docs/workflows.md, A step set aside). Set aside silently, it left
its workflow open for good, the step reading READY."""

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Outcome
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from django_threadmill.worker.reaper import reap_once
from django_threadmill.workflows import WorkflowResult, chain, step
from tests.backend_support import finish, start
from tests.lifecycle.support import wait_for_expiry

from .tasks import add, number


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"lease_ttl": 1.0}  # the shortest lease settings take: expiry is polled for


def damaged_step(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> tuple[WorkflowResult, str, str]:
    """Enqueue a chain of two steps; return it, its first step's id and record key."""
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    first = flow.steps[0].task_id
    key = backend.broker.record_key(first)
    assert key is not None
    return flow, first, key


def assert_failed_naming(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    flow: WorkflowResult,
    first: str,
    script: str,
) -> None:
    """The workflow failed naming its first step, set aside by ``script``; the step after it
    never ran; nothing waits in the outbox, and the record counts no entry waiting."""
    keys = backend.broker.queue_keys("default")
    assert redis_client.hget(keys.damaged, first).split(" ")[1] == f"{script}:"
    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED, [s.state for s in flow.steps]
    assert flow.why.startswith(f"step 0 failed: Task {first!r} was set aside as damaged")
    assert flow.steps[1].state == "NOT_RUN"
    assert redis_client.llen(keys.outbox) == 0
    assert not redis_client.hexists(keys.record(first), "outboxed")


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("nerrors", "5000", "nerrors 5000 is past 1000, the most attempts"),
        ("state", "BANANA", "index in state BANANA"),
        ("payload", None, "no payload field"),
        ("payload", b"\xff", "payload not UTF-8"),  # set aside by set_aside.lua
    ],
)
def test_a_step_damaged_while_it_waits_fails_its_workflow(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    field: str,
    value: str | bytes | None,
    why: str,
) -> None:
    flow, first, key = damaged_step(backend, redis_client)
    if value is None:
        redis_client.hdel(key, field)
    else:
        redis_client.hset(key, field, value)

    drain()

    assert_failed_naming(backend, redis_client, flow, first, "acquire")
    assert why in flow.why


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("nerrors", "5000", "nerrors 5000 is past 1000, the most attempts"),
        ("state", "BANANA", "index in state BANANA"),
        ("workers", b"\xff", "workers not UTF-8"),  # set aside by set_aside_expired.lua
    ],
)
def test_a_step_damaged_while_it_ran_fails_its_workflow_when_reaped(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    field: str,
    value: str | bytes,
    why: str,
) -> None:
    flow, first, key = damaged_step(backend, redis_client)
    start(backend, first)  # its worker is then killed: nobody renews the lease
    redis_client.hset(key, field, value)
    wait_for_expiry(backend.broker, redis_client)

    report = reap_once(backend)

    assert report.advanced == 1
    assert_failed_naming(backend, redis_client, flow, first, "reap")
    assert why in flow.why


def test_a_step_set_aside_that_ends_after_all_advances_its_workflow_once(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """The reaper sets aside a running step whose worker was only slow, and its workflow fails
    from it; the worker's finish then lands, a second entry: the step's outcome is recorded
    in its workflow once (docs/workflows.md, Exactly once), the step after it stays unrun, and
    the record expires once both entries are drained."""
    flow, first, key = damaged_step(backend, redis_client)
    lease = start(backend, first)
    redis_client.hset(key, "nerrors", "5000")
    wait_for_expiry(backend.broker, redis_client)
    assert reap_once(backend).advanced == 1
    flow.refresh()
    assert flow.status == TaskResultStatus.FAILED
    why = flow.why

    finish(backend, lease, Outcome.SUCCESSFUL, "2")
    drain()

    flow.refresh()
    assert (flow.status, flow.why) == (TaskResultStatus.FAILED, why)
    assert flow.steps[1].state == "NOT_RUN"
    assert redis_client.llen(backend.broker.queue_keys("default").outbox) == 0
    assert not redis_client.hexists(key, "outboxed")
    assert redis_client.pttl(key) > 0
