"""drain(): a task's reports are kept in memory and its last one written with its outcome."""

from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.progress import progress_of
from django_threadmill.testing import Threadmill
from tests.progress.tasks import (
    areports_then_waits,
    reports_from_its_own_thread,
    reports_then_fails,
    reports_then_waits,
)


def test_the_last_report_of_each_task_is_written_with_its_outcome(
    threadmill: Threadmill, backend: ThreadmillTaskBackend, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    gate.touch()  # the tasks go straight on to their last report
    sync = reports_then_waits.enqueue(str(gate), 100)
    on_loop = areports_then_waits.enqueue(str(gate), 100)
    failing = reports_then_fails.enqueue()
    aside = reports_from_its_own_thread.enqueue()

    assert threadmill.drain() == 4

    for result in (sync, on_loop):
        found = progress_of(result)
        assert found is not None
        assert (found.done, found.total, found.note) == (10, 10, "done")
    failed = progress_of(failing)
    assert failed is not None
    assert (failed.done, failed.note) == (1, "halfway")
    assert backend.get_result(failing.id).status == TaskResultStatus.FAILED
    from_thread = progress_of(aside)
    assert from_thread is not None
    assert (from_thread.done, from_thread.total, from_thread.note) == (5, None, "aside")
