"""drain() stops with an error naming the tasks once it has run ``max_tasks`` attempts, and
ThreadmillTestMixin gives a class's own TASKS override keys of its own in a parallel run.

A task that enqueued itself, or two that enqueued each other, once made drain() run forever:
the test hung until its timeout, with no word of which task kept its queue from emptying.
"""

import re

import pytest
from django.test import SimpleTestCase, override_settings
from django.test import runner as django_runner

from django_threadmill.aliases import threadmill_backend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import DrainDidNotEmpty
from django_threadmill.testing import Threadmill, ThreadmillTestMixin, drain
from tests.conftest import tasks_setting

from . import tasks
from .cases import run_case


def test_a_task_that_enqueues_itself_stops_the_drain_naming_it(threadmill: Threadmill) -> None:
    tasks.enqueues_itself.enqueue()
    message = (
        r"^drain\(\) ran max_tasks=20 tasks and the queues \['default', 'emails', 'reports'\] "
        r"are still not empty: 'tests\.testing\.tasks\.enqueues_itself' ran 20 times\. "
    )
    with pytest.raises(DrainDidNotEmpty, match=message) as raised:
        threadmill.drain(max_tasks=20)
    assert "drain(max_tasks=...)" in str(raised.value)
    assert raised.value.ran == 20
    # The one it enqueued last is left queued, not leased: the next drain can run it.
    with pytest.raises(DrainDidNotEmpty):
        threadmill.drain(max_tasks=1)


def test_two_tasks_that_enqueue_each_other_are_both_named(threadmill: Threadmill) -> None:
    tasks.ping.enqueue()
    named = "'tests.testing.tasks.ping' ran 5 times, 'tests.testing.tasks.pong' ran 5 times. "
    with pytest.raises(DrainDidNotEmpty, match=re.escape(named)):
        threadmill.drain(max_tasks=10)


def test_the_default_bound_stops_it_too(threadmill: Threadmill) -> None:
    tasks.enqueues_itself.enqueue()
    with pytest.raises(DrainDidNotEmpty, match="ran max_tasks=1000 tasks"):
        threadmill.drain()


def test_exactly_max_tasks_that_empty_the_queues_are_no_error(threadmill: Threadmill) -> None:
    results = [tasks.record.enqueue(str(n)) for n in range(3)]
    results.append(tasks.threads_seen.enqueue())  # async ones count too
    assert threadmill.drain(max_tasks=4) == 4
    for result in results:
        result.refresh()
        assert result.status == TaskResultStatus.SUCCESSFUL


def test_the_bound_counts_async_tasks_one_by_one(threadmill: Threadmill) -> None:
    queued = [tasks.threads_seen.enqueue() for _ in range(3)]
    with pytest.raises(DrainDidNotEmpty, match="ran max_tasks=2 tasks"):
        threadmill.drain(max_tasks=2)
    statuses = []
    for result in queued:
        result.refresh()
        statuses.append(result.status)
    assert sorted(statuses) == [TaskResultStatus.READY] + [TaskResultStatus.SUCCESSFUL] * 2


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "10"])
def test_a_bound_that_is_not_a_positive_whole_number_is_refused(bad: object) -> None:
    # A wrong type is named too: "max_tasks='10' is a str, not a number of tasks."
    refused = f"^max_tasks={re.escape(repr(bad))} is (an? \\w+, )?not a number"
    with pytest.raises((ValueError, TypeError), match=refused):
        drain(max_tasks=bad)  # type: ignore[arg-type]


def test_a_testcase_overriding_tasks_for_its_class_gets_its_own_keys_in_a_parallel_run(
    monkeypatch: pytest.MonkeyPatch, redis_url: str, key_prefix: str
) -> None:
    """Its override replaced the settings the mixin had suffixed, so two processes running
    classes with one override shared keys: one's flush deleted the tasks of the other's test."""
    monkeypatch.setattr(django_runner, "_worker_id", 3)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # this suite's own, under xdist
    seen: list[str] = []

    @override_settings(TASKS=tasks_setting(redis_url, f"{key_prefix}-class"))
    class OverridesTasks(ThreadmillTestMixin, SimpleTestCase):
        def test_prefix(self) -> None:
            seen.append(threadmill_backend("default").settings.key_prefix)

    run_case(OverridesTasks)
    assert seen == [f"{key_prefix}-class-django3"]
