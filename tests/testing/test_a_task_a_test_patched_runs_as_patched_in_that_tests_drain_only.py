"""A task a test patched with a stand-in task (``mock.patch("myshop.tasks.charge",
fake_charge)``) runs as patched in that test's drain, and as written in the next test's.

The drain finds a task by its path in the module, as a worker does, and kept each task it
rebuilt in a cache keyed by path: the stand-in a test's drain ran first went on running in
every later test's drain of that task, after the patch ended, and a patch made after a drain of
the task was not seen at all, the real task running in its place. (The tasks are enqueued
before the patch: an enqueue checks that the task is found at its own path.)
"""

from unittest import mock

import pytest

from django_threadmill.compat import task
from django_threadmill.testing import Threadmill

from . import tasks

stand_in_runs: list[str] = []


@task
def stand_in(label: str) -> None:
    stand_in_runs.append(label)


@pytest.fixture(autouse=True)
def no_stand_in_runs_yet() -> None:
    stand_in_runs.clear()


def labels() -> list[str]:
    return [label for label, _ in tasks.runs]


def test_the_stand_in_runs_only_while_the_patch_holds(threadmill: Threadmill) -> None:
    tasks.record.enqueue("while patched")
    with mock.patch.object(tasks, "record", stand_in):
        assert threadmill.drain() == 1
    tasks.record.enqueue("after the patch")
    assert threadmill.drain() == 1
    assert stand_in_runs == ["while patched"]
    assert labels() == ["after the patch"]


def test_a_patch_made_after_a_drain_of_the_task_is_seen(threadmill: Threadmill) -> None:
    tasks.record.enqueue("before the patch")
    assert threadmill.drain() == 1
    tasks.record.enqueue("while patched")
    with mock.patch.object(tasks, "record", stand_in):
        assert threadmill.drain() == 1
    assert labels() == ["before the patch"]
    assert stand_in_runs == ["while patched"]
