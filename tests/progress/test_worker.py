"""A real worker process: progress a sync task and an async one report while they run is read
back with progress_of, a tight loop of reports costs a few Redis calls, and the last report
stays with the result."""

from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import Task, TaskResultStatus
from django_threadmill.progress import progress_of
from tests.support import Command, command_calls, running, wait_until

from .tasks import (
    areports_then_waits,
    plain,
    reports_a_note,
    reports_then_fails,
    reports_then_waits,
)

REPORTS = 10_000


@pytest.mark.parametrize("reporting", [reports_then_waits, areports_then_waits])
def test_progress_is_read_while_the_task_runs_and_kept_with_its_result(
    start_worker: Callable[..., Command],
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    tmp_path: Path,
    reporting: Task,
) -> None:
    gate = tmp_path / "gate"
    with running(start_worker()):
        warm_up = plain.enqueue()  # the worker's start-up calls are over once it ran
        wait_until(lambda: backend.get_result(warm_up.id).is_finished, "a first task running")
        redis_client.config_resetstat()
        result = reporting.enqueue(str(gate), REPORTS)
        last = f"step 3 ({REPORTS} of {REPORTS})"
        wait_until(
            lambda: (found := progress_of(result)) is not None and found.note == last,
            "the latest of the task's reports being readable",
        )
        # Acquire, start and the coalesced reports: a handful, not one per report.
        assert command_calls(redis_client)["evalsha"] < 20
        running_progress = progress_of(result)
        assert running_progress is not None
        assert (running_progress.done, running_progress.total) == (3, 10)
        assert running_progress.percent == 30
        assert running_progress.reported_at.tzinfo is not None
        gate.touch()
        wait_until(
            lambda: backend.get_result(result.id).status == TaskResultStatus.SUCCESSFUL,
            "the task succeeding",
        )

    finished = progress_of(result)
    assert finished is not None
    assert (finished.done, finished.total, finished.note, finished.percent) == (10, 10, "done", 100)
    assert finished.reported_at >= running_progress.reported_at


def test_a_failed_task_keeps_the_progress_it_reported(
    start_worker: Callable[..., Command], backend: ThreadmillTaskBackend
) -> None:
    with running(start_worker()):
        result = reports_then_fails.enqueue()
        wait_until(
            lambda: backend.get_result(result.id).status == TaskResultStatus.FAILED,
            "the task failing",
        )
    found = progress_of(result)
    assert found is not None
    assert (found.done, found.total, found.note) == (1, 2, "halfway")


def test_a_note_utf8_cannot_hold_fails_its_task_and_the_worker_goes_on(
    start_worker: Callable[..., Command], backend: ThreadmillTaskBackend
) -> None:
    # A file name that is not UTF-8, as os.fsdecode hands it over. Once the note reached the
    # ack writer, whose Redis call failed to encode it: the process died (exit 5) with the
    # results of the task and its batch-mates unwritten, and so again after every reap.
    with running(start_worker()):
        noted = reports_a_note.enqueue("report \udcff.pdf")
        after = plain.enqueue()
        wait_until(
            lambda: all(backend.get_result(r.id).is_finished for r in (noted, after)),
            "both tasks finishing",
        )
    failed = backend.get_result(noted.id)
    assert failed.status == TaskResultStatus.FAILED
    assert "note holds '\\udcff' at index 7, a lone surrogate" in failed.errors[0].traceback
    assert backend.get_result(after.id).status == TaskResultStatus.SUCCESSFUL
    assert progress_of(failed) is None
