"""A reap whose finish call lost its reply is settled again by the next pass under the same mark,
and that pass logs, counts and announces what the first call decided, which Redis recorded.

The next pass asked the task's retry policy again. A policy whose answer changed (it reads state
that changes; ExponentialBackoff's jitter changes the delay each time) had the pass say
"Lease expired, task FAILED" and send task_finished FAILED for an attempt Redis had recorded as
a retry, or say "retrying" and send nothing for one Redis had recorded as FAILED: its only
task_finished never came.
"""

from collections.abc import Iterator
from datetime import timedelta

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.broker.scripts import ScriptName
from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.worker.reaper import reap_pass
from tests.observability.lost_replies import lose_replies

from .policy_that_changes import ANSWERS, changes_its_mind
from .support import run

LATER = timedelta(minutes=1)


@pytest.fixture(autouse=True)
def answers_forgotten() -> Iterator[None]:
    """The policy's answers are the module's: each test gives its own."""
    yield
    ANSWERS.clear()


@pytest.mark.parametrize(
    ("answers", "recorded"),
    [([LATER, None], TaskResultStatus.READY), ([None, LATER], TaskResultStatus.FAILED)],
    ids=["retry-then-fail", "fail-then-retry"],
)
def test_the_pass_settling_again_says_what_the_lost_call_recorded(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    finished: list[TaskResult],
    answers: list[timedelta | None],
    recorded: TaskResultStatus,
) -> None:
    ANSWERS[:] = answers
    task_id = changes_its_mind.enqueue().id
    [lease] = run(broker)
    redis_client.zadd(broker.queue_keys("default").leases, {lease.task_id: 1}, xx=True)
    losses = lose_replies(broker, monkeypatch, ScriptName.FINISH)
    losses.left = 1  # the finish call lands, its reply is lost

    first = reap_pass(backend)
    assert (list(first.failures), losses.lost) == (["default"], 1)
    assert backend.get_result(task_id).status == recorded

    second = reap_pass(backend)  # settles it again under the same mark: "already"

    failed = recorded == TaskResultStatus.FAILED
    assert (second.failed, second.retried, second.stale) == (int(failed), int(not failed), 0)
    assert [(r.id, r.status) for r in finished] == ([(task_id, recorded)] if failed else [])
    assert backend.get_result(task_id).status == recorded
    assert not broker.tally
