"""A cancel whose workflow's hash expires right after the cancel recorded it (``result_ttl``
shorter than the cancel's next round trip) still cancels the steps waiting in their queues,
and returns True: it read the workflow back to find them, found nothing, raised
``WorkflowDoesNotExist``, and the steps ran (docs/workflows.md, Cancel)."""

from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from django_threadmill.workflows import group, step
from tests.support import wait_until

from .tasks import counted


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"result_ttl": 0.001}  # seconds: the ended workflow's hash expires at once


def expired_first(
    read: Callable[[str], dict[str, str]], key: str, client: redis.Redis
) -> Callable[[str], dict[str, str]]:
    """``read`` (a read of the workflow's hash), made to come after the hash, once it expires,
    is gone: as a cancel's next round trip finds it under a short ``result_ttl``."""

    def after_expiry(workflow_id: str) -> dict[str, str]:
        if client.pttl(key) > 0:  # expiring: ended, and given its result_ttl
            wait_until(lambda: not client.exists(key), "the workflow's hash to expire")
        return read(workflow_id)

    return after_expiry


def test_a_cancel_whose_workflow_expired_at_once_cancels_its_waiting_steps(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    log = tmp_path / "runs"
    flow = group(step(counted, 1, str(log)), step(counted, 2, str(log))).enqueue()
    broker = backend.broker
    key = broker.keyspace.workflow(flow.id)
    monkeypatch.setattr(
        broker, "workflow_fields", expired_first(broker.workflow_fields, key, redis_client)
    )

    assert flow.cancel("not needed")

    assert (flow.status, flow.why) == (TaskResultStatus.FAILED, "cancelled: not needed")
    # Read alone, their workflow gone, and before a drain starts their result_ttl.
    for waiting in flow.steps:
        result = backend.get_result(waiting.task_id)
        assert result.status == TaskResultStatus.FAILED
        assert (
            result.errors[-1]
            .traceback.strip()
            .endswith("Cancelled before it ran: its workflow was cancelled: not needed")
        )
    assert drain() == 0
    assert not log.exists()  # no step ran
