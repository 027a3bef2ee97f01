"""drain() in a Django TestCase runs the ``on_commit`` callbacks a task leaves when it ends, as
the task's own commit would run them in a worker; one that raises is the task's failure there.

Such a callback once stopped the drain with its exception after the task had ended but before
its outcome was written: the task stayed RUNNING, with no reaper in a test to settle it, and so
did every async task of its batch.
"""

import pytest
from django.test import TestCase

from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import ThreadmillTestMixin

from . import tasks


class ACommitCallbackThatRaises(ThreadmillTestMixin, TestCase):
    def test_it_fails_its_sync_task_which_is_retried_and_the_drain_goes_on(self) -> None:
        failing = tasks.commits_a_failing_callback.enqueue()
        after = tasks.record.enqueue("after")
        assert self.drain() == 3  # two attempts, then the task after it
        failing.refresh()
        assert failing.status == TaskResultStatus.FAILED
        assert [error.exception_class for error in failing.errors] == [tasks.MailServerDown] * 2
        assert "MailServerDown: the mail server is down" in failing.errors[-1].traceback
        after.refresh()
        assert after.status == TaskResultStatus.SUCCESSFUL

    def test_after_async_tasks_it_reaches_the_test_with_their_outcomes_written(self) -> None:
        """Async tasks' callbacks run on this thread once their batch ends, interleaved, so
        which task left one is not known: it is raised to the test, as Django's
        captureOnCommitCallbacks(execute=True) does."""
        failing = tasks.acommits_a_failing_callback.enqueue()
        beside = tasks.threads_seen.enqueue()
        with pytest.raises(tasks.MailServerDown, match=r"^the mail server is down$"):
            self.drain()
        for result in (failing, beside):
            result.refresh()
            assert result.status == TaskResultStatus.SUCCESSFUL
