"""A key of another type in the queue of one workflow's next step holds that workflow's outbox
entry alone: the workflows after it in the outbox advance, and it advances once the key is
deleted (docs/workflows.md, An entry that cannot be advanced). Redis going away while a reap
pass drains the outboxes is reported, not raised.

Before, the refusal was raised as if Redis were away: every drain of the outbox stopped at that
entry, and every workflow behind it stayed waiting until someone deleted the key; and
``reap_pass`` raised from its drain what it reports from its reaping.
"""

import logging
from typing import Any

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import task_enqueued
from django_threadmill.testing import drain as run_tasks
from django_threadmill.worker.reaper import reap_pass
from django_threadmill.workflows import WorkflowResult, chain, step
from django_threadmill.workflows.advance import drain
from django_threadmill.workflows.failed_entries import RETRY_AFTER_S, FailedEntries
from tests.backend_support import succeed
from tests.servers.redis_server import RedisProcess
from tests.support import HandClock

from .tasks import add, number

REFUSED = "Workflow not advanced from a step, Redis refused a key it needs"


@pytest.fixture
def redis_url(durable_redis: RedisProcess) -> str:
    """Run this module on a server of its own: a test kills it."""
    return durable_redis.url


def outbox(backend: ThreadmillTaskBackend) -> list[str]:
    return backend.broker.client.lrange(backend.broker.queue_keys("default").outbox, 0, -1)


def last_value(flow: WorkflowResult) -> object:
    flow.refresh()
    last = flow.results[-1]
    assert last is not None, "the last step was never enqueued"
    return last.return_value


def test_a_refused_queue_holds_its_workflow_alone_until_the_key_is_deleted(
    backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    to_emails = chain(step(number, 1), step(add.using(queue_name="emails"), 1)).enqueue()
    on_default = chain(step(number, 2), step(add, 2)).enqueue()
    emails_ready = backend.broker.queue_keys("emails").ready
    backend.broker.client.set(emails_ready, "not a sorted set")
    succeed(backend, to_emails.steps[0].task_id, 1)  # its entry first in default's outbox
    succeed(backend, on_default.steps[0].task_id, 2)
    clock = HandClock(1000.0)
    failed = FailedEntries(clock)

    with caplog.at_level(logging.WARNING, logger="django_threadmill"):
        assert drain(backend, "default", failed) == 1
        assert drain(backend, "default", failed) == 0  # held: not tried again this minute

    assert outbox(backend) == [to_emails.steps[0].task_id]
    assert backend.broker.record(on_default.steps[1].task_id) is not None
    assert backend.broker.record(to_emails.steps[1].task_id) is None
    [warning] = [r.getMessage() for r in caplog.records if r.getMessage().startswith(REFUSED)]
    assert warning.startswith(
        f"{REFUSED}; its outbox entry stays and is tried again in 60s "
        f"task_id={to_emails.steps[0].task_id} error=Redis at "
    )
    assert f"in {emails_ready})" in warning  # the key to delete

    backend.broker.client.delete(emails_ready)
    clock.now += RETRY_AFTER_S
    assert drain(backend, "default", failed) == 1
    assert outbox(backend) == []
    run_tasks()
    assert last_value(to_emails) == 2
    assert last_value(on_default) == 4


def test_a_reap_pass_reports_redis_lost_while_it_drains(
    backend: ThreadmillTaskBackend, durable_redis: RedisProcess
) -> None:
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    succeed(backend, flow.steps[0].task_id, 1)

    def kill_redis(sender: type, **kwargs: Any) -> None:
        durable_redis.kill()  # the next step is stored: its entry's removal finds Redis gone

    task_enqueued.connect(kill_redis, weak=False)
    try:
        report = reap_pass(backend)
    finally:
        task_enqueued.disconnect(kill_redis)

    assert report.unreachable is not None
    assert "is unreachable" in str(report.unreachable)
    assert report.failures == {}
    assert report.advanced == 0
