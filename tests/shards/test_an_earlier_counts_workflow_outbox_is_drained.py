"""A workflow step that ended under an earlier ``queue_shards`` advances its workflow once the
earlier count's worker and reaper are gone (docs/scaling.md, Changing the shard count).

Before, its outbox entry waited in the earlier count's part, where only that count's drainers
looked: ``threadmill.W008`` was clear (no task waited or ran there), the operator stopped the
old worker and reaper as the docs say, and the workflow's next step was never enqueued.
"""

import signal
from pathlib import Path

import pytest
import redis
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus, task_backends
from django_threadmill.worker.reaper import reap_once
from django_threadmill.workflows import chain, step
from tests.conftest import tasks_setting
from tests.support import Command, round_trips, run_to_completion, worker
from tests.workflows.tasks import counted
from tests.workflows.test_exactly_once import dying_env, runs

from .conftest import SHARDS

OLD = {"queue_shards": {"default": SHARDS}}  # the count the package's backend stores under
NEW = {"queue_shards": {"default": 2}}
# The queues' names, every part's reap call, their metrics send and trim, the sizes of every
# part's outbox, every count's included: one round trip each.
PASS_ROUND_TRIPS = 4


def old_outboxes(backend: ThreadmillTaskBackend, client: redis.Redis) -> int:
    """The entries waiting in the outboxes of the earlier count's parts of "default"."""
    parts = backend.broker.parts("default")
    return sum(client.llen(backend.broker.queue_keys(part).outbox) for part in parts)


def test_the_new_counts_reaper_advances_a_workflow_from_the_earlier_counts_outbox(
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    log = tmp_path / "runs"
    flow = chain(
        step(counted, 1, str(log)), step(counted.using(queue_name="emails"), log=str(log))
    ).enqueue()
    # The earlier count's worker runs the first step and dies before its workflow advanced.
    dying = worker(
        redis_url,
        key_prefix,
        "--processes",
        "0",
        "--burst",
        "--queue",
        "default",
        extra_env=dying_env(tmp_path, "after-advance"),
        options=OLD,
    )
    try:
        assert dying.wait() == -signal.SIGKILL, dying.log
    finally:
        dying.close()
    assert runs(log) == ["counted 1"]
    assert old_outboxes(backend, redis_client) == 1
    checked = run_to_completion(
        Command(redis_url, key_prefix, "check", "--deploy", "--tag", "threadmill", options=NEW)
    )
    assert "threadmill.W008" not in checked  # the cue to stop the earlier count's reaper

    reaped = run_to_completion(
        Command(redis_url, key_prefix, "threadmill_reap", "--once", options=NEW)
    )

    assert "workflow_steps_advanced=1" in reaped, reaped
    assert old_outboxes(backend, redis_client) == 0
    run_to_completion(worker(redis_url, key_prefix, "--burst", options=NEW))
    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert runs(log) == ["counted 1"] * 2


def test_the_earlier_counts_outboxes_cost_a_pass_no_round_trip(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Their sizes are read in the one round trip that reads the new count's."""
    backend.broker.register_queues(["default"])  # the earlier count recorded
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, **NEW)):
        new = task_backends["default"]
        assert isinstance(new, ThreadmillTaskBackend)
        reap_once(new)  # scripts loaded
        with round_trips(monkeypatch) as sent:
            reap_once(new)
    assert len(sent) == PASS_ROUND_TRIPS
