"""A drain that ran nothing says which other ThreadmillTaskBackend alias holds tasks, and the
drain that runs them (docs/testing.md, What a drain leaves).

Each alias keeps its tasks under keys of its own: a test that enqueued with
``task.using(backend="bulk")`` and drained the default alias got 0 and no word why.
"""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.testing import Threadmill

from . import tasks
from .said import warnings_of


def test_the_other_alias_is_named_with_its_tasks_and_the_drain_that_runs_them(
    threadmill: Threadmill, bulk: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    tasks.record.using(backend="bulk").enqueue("one")
    tasks.record.using(backend="bulk").enqueue("two")

    assert threadmill.drain() == 0

    assert warnings_of(caplog) == [
        "drain() returned 0 from the backend 'default', and the backend 'bulk' holds 2 tasks in "
        "the queues ['default']: each TASKS alias keeps its tasks apart, and a drain runs one "
        "alias's. Tasks enqueued with .using(backend='bulk'), or by a task whose backend is "
        "'bulk', run with drain(backend='bulk')."
    ]
    assert threadmill.drain(backend="bulk") == 2


def test_a_drain_that_ran_tasks_does_not_look_at_other_aliases(
    threadmill: Threadmill, bulk: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    tasks.record.using(backend="bulk").enqueue("left in bulk")
    tasks.record.enqueue("run")

    assert threadmill.drain() == 1

    assert warnings_of(caplog) == []


def test_a_drain_that_ran_nothing_with_every_other_alias_empty_says_nothing(
    threadmill: Threadmill, bulk: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    assert threadmill.drain() == 0

    assert warnings_of(caplog) == []
