"""The WARNING of a retry scheduled names the task's path, as the ERROR of a failure does: it
named the task's id alone, so a log search for a task's failures found its last attempt only."""

import pytest

from django_threadmill.testing import Threadmill

from . import tasks

PATH = "tests.testing.tasks.always_fails"


def test_each_retry_and_the_failure_name_the_path(
    threadmill: Threadmill, caplog: pytest.LogCaptureFixture
) -> None:
    result = tasks.always_fails.enqueue()
    with caplog.at_level("WARNING", logger="django_threadmill.worker.executor"):
        assert threadmill.drain() == 3
    lines = [
        r.getMessage() for r in caplog.records if r.name == "django_threadmill.worker.executor"
    ]
    assert [line.split(" error=")[0] for line in lines] == [
        f"Task retry scheduled task_id={result.id} path={PATH} attempt=1 delay_s=0.010",
        f"Task retry scheduled task_id={result.id} path={PATH} attempt=2 delay_s=0.020",
        f"Task failed task_id={result.id} path={PATH}",
    ]
