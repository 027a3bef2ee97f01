"""A purge of one state deletes every result in it while the done index changes under it.

Older entries leave the index between the purge's batches: another operator's purge, a
requeue, the workers' trim of expired results. The walk must skip none it has not looked at.
"""

from collections.abc import Callable
from typing import Any

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from tests.admin.conftest import failed_task, successful_task


def between_batches(monkeypatch: pytest.MonkeyPatch, meanwhile: Callable[[], None]) -> None:
    """Run ``meanwhile`` once, after the first script call of the purge under test."""
    run = Broker._run

    def then_meanwhile(self: Broker, call: Any, **kwargs: Any) -> Any:
        reply = run(self, call, **kwargs)
        monkeypatch.setattr(Broker, "_run", run)  # meanwhile's own calls, and the rest, go on
        meanwhile()
        return reply

    monkeypatch.setattr(Broker, "_run", then_meanwhile)


def test_purge_of_failed_deletes_every_one_while_another_operator_purges_the_rest(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    successful = [successful_task(backend) for _ in range(4)]  # the oldest: walked first
    failed = [failed_task(backend) for _ in range(4)]
    between_batches(
        monkeypatch, lambda: backend.purge_finished("default", TaskResultStatus.SUCCESSFUL)
    )

    deleted = backend.purge_finished("default", TaskResultStatus.FAILED, batch_size=4)

    assert deleted == 4, f"{4 - deleted} FAILED results were skipped"
    assert backend.broker.records([*successful, *failed]) == [None] * 8


def test_purge_goes_on_when_the_last_result_it_kept_is_requeued_meanwhile(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed = [failed_task(backend) for _ in range(2)]
    successful = [successful_task(backend) for _ in range(4)]
    between_batches(monkeypatch, lambda: backend.requeue(failed[-1]))

    deleted = backend.purge_finished("default", TaskResultStatus.SUCCESSFUL, batch_size=2)

    assert deleted == 4
    assert backend.broker.records(successful) == [None] * 4
    assert backend.get_result(failed[0]).status == TaskResultStatus.FAILED
    assert backend.get_result(failed[1]).status == TaskResultStatus.READY
