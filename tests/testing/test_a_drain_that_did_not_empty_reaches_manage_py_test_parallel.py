"""A ``DrainDidNotEmpty`` raised in a test run by ``manage.py test --parallel`` reaches the
runner as that test's outcome.

The parallel runner sends each test's error from its worker process to the main one with
pickle, and first checks that it unpickles (``RemoteTestResult.check_picklable``). The error
took its ``ran`` as a second argument that it did not keep in ``args``, so unpickling called
``DrainDidNotEmpty(message)`` and failed: the run stopped with a ``TypeError`` about ``ran``
instead of the drain's message, and with tblib before 3.1 installed (which pickles an error's
context) the main process's result thread died on it and the run hung for good. The same held
for ``UniqueKeyHeld`` and ``StepOfCancelledWorkflow``.
"""

import pickle
from pathlib import Path

import pytest

from django_threadmill.exceptions import (
    DrainDidNotEmpty,
    StepOfCancelledWorkflow,
    ThreadmillError,
    UniqueKeyHeld,
)

from .test_sample_project import run_sample

# Run by the sample project's manage.py test, from a directory on PYTHONPATH.
LOOPING_TESTS = """
import unittest

from django.test import TestCase

from django_threadmill.task import task
from django_threadmill.testing import ThreadmillTestMixin


@task
def enqueues_itself() -> None:
    enqueues_itself.enqueue()


class ALoopingTask(ThreadmillTestMixin, TestCase):
    # Without tblib the runner pickles no traceback: it drops that of an expected failure, and
    # checks that the error itself crosses to the main process.
    @unittest.expectedFailure
    def test_its_drain_stops(self) -> None:
        enqueues_itself.enqueue()
        self.drain(max_tasks=3)


class AnotherClass(ThreadmillTestMixin, TestCase):  # the runner forks for two classes or more
    def test_nothing_queued(self) -> None:
        assert self.drain() == 0
"""


def test_the_parallel_runner_reports_it_as_the_tests_outcome(
    redis_url: str, key_prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "looping_tests.py").write_text(LOOPING_TESTS)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    output = run_sample(
        redis_url, key_prefix, "manage.py", "test", "looping_tests", "--parallel", "2"
    )
    assert "Ran 2 tests" in output, output
    assert "OK (expected failures=1)" in output, output


@pytest.mark.parametrize(
    "error",
    [
        DrainDidNotEmpty("drain() ran max_tasks=3 tasks ...", ran=3),
        UniqueKeyHeld("a@default", "b@default"),
        StepOfCancelledWorkflow("a@default", "w1", 2, "cancelled: by hand", not_run=True),
    ],
    ids=type,
)
def test_it_comes_back_from_pickle_as_it_was(error: ThreadmillError) -> None:
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error)
    assert again.args == error.args
    assert str(again) == str(error)
    assert vars(again) == vars(error)
