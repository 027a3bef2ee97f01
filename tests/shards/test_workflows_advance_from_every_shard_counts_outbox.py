"""A workflow step that ended under an earlier ``queue_shards`` advances its workflow from a
worker that runs no reaper and from ``testing.drain()`` (docs/scaling.md, Changing the shard
count).

Before, a worker's workflows thread and ``drain()`` looked only at the outboxes of the count
the settings give: with no ``threadmill_reap`` and workers started with ``--reap-interval 0``,
the entry waited in the earlier count's part and the workflow stayed open for good.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus, task_backends
from django_threadmill.testing import drain
from django_threadmill.workflows import WorkflowResult, chain, step
from tests.broker.conftest import finish, start
from tests.conftest import tasks_setting
from tests.support import round_trips, run_to_completion, worker
from tests.workflows.tasks import counted
from tests.workflows.test_exactly_once import runs

from .conftest import SHARDS

NEW = {"queue_shards": {"default": 2}}  # the package's backend stores "default" under SHARDS
WORKER = "earlier-worker"


@contextmanager
def new_count(redis_url: str, key_prefix: str) -> Iterator[ThreadmillTaskBackend]:
    """Yield the backend of ``key_prefix`` with the settings of the deploy that changed N."""
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, **NEW)):
        backend = task_backends["default"]
        assert isinstance(backend, ThreadmillTaskBackend)
        yield backend


def first_step_ended_under_the_earlier_count(
    backend: ThreadmillTaskBackend, log: Path
) -> WorkflowResult:
    """Launch a chain whose first step (on "default") a worker of the earlier count ran, and
    whose workflow did not advance: the step's entry waits in that count's outbox."""
    flow = chain(
        step(counted, 1, str(log)), step(counted.using(queue_name="emails"), log=str(log))
    ).enqueue()
    [reservation] = backend.broker.acquire("default", SHARDS).reservations
    assert backend.broker.start(WORKER, [start(reservation.lease)]) == []
    assert backend.broker.finish(WORKER, [finish(reservation.lease, value="1")]) == []
    assert earlier_entries(backend) == 1
    return flow


def earlier_entries(backend: ThreadmillTaskBackend) -> int:
    """The entries waiting in the outboxes of the earlier count's parts of "default"."""
    assert backend.settings.shards_of("default") == SHARDS
    client = backend.broker.client
    return sum(
        client.llen(backend.broker.queue_keys(part).outbox)
        for part in backend.broker.parts("default")
    )


def test_a_worker_that_runs_no_reaper_advances_a_workflow_from_the_earlier_counts_outbox(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    log = tmp_path / "runs"
    flow = first_step_ended_under_the_earlier_count(backend, log)

    no_reaper = ("--processes", "0", "--burst", "--reap-interval", "0")
    run_to_completion(worker(redis_url, key_prefix, *no_reaper, options=NEW))

    assert earlier_entries(backend) == 0  # its workflows thread drained it
    run_to_completion(worker(redis_url, key_prefix, *no_reaper, options=NEW))  # step 2, if left
    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert runs(log) == ["counted 1"]


def test_drain_advances_a_workflow_from_the_earlier_counts_outbox(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    log = tmp_path / "runs"
    flow = first_step_ended_under_the_earlier_count(backend, log)

    with new_count(redis_url, key_prefix):
        assert drain() == 1  # the second step, which the advance enqueued

    assert earlier_entries(backend) == 0
    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert runs(log) == ["counted 1"]


@pytest.mark.parametrize("tasks_options", [{}])  # one count: "default" was never sharded
def test_the_look_at_every_outbox_costs_one_round_trip_with_one_count(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend.broker.ping()  # its connection made
    with round_trips(monkeypatch) as sent:
        look = backend.broker.outboxes_of_every_count(["default", "emails"])
    assert (look.found, look.other, look.unread, len(sent)) == ([], [], {}, 1)


def test_a_count_once_seen_costs_the_look_no_round_trip(
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """The layouts set is read with the outboxes' sizes; the parts of a count first seen cost
    a second round trip, and the next look none more."""
    first_step_ended_under_the_earlier_count(backend, tmp_path / "runs")
    with new_count(redis_url, key_prefix) as new:
        new.broker.ping()  # its connection made
        with round_trips(monkeypatch) as sent:
            look = new.broker.outboxes_of_every_count(["default"])
        assert len(sent) == 2
        found, other = look.found, look.other
        earlier = backend.broker.parts("default")
        [part] = found
        assert part in earlier
        assert set(earlier) <= set(other)
        with round_trips(monkeypatch) as sent:
            assert new.broker.outboxes_of_every_count(["default"], other) == look
        assert len(sent) == 1
