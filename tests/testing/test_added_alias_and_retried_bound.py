"""The test helpers (django_threadmill.testing) under what a project's suite does with them.

A flush forgets what every pipeline of its location and key prefix remembered of the keys it
deleted, whatever the pipeline's alias: the flush deletes every alias's keys under the prefix.
A second alias a test added with the same key prefix (the default one, ``tm``, is every
alias's) once kept remembering the queues it had registered, so the next test's tasks went
to a queue Redis no longer listed: the admin, the metrics and the reaper did not see it.

A drain stopped by its ``max_tasks`` bound names the tasks that ran most; one its retry policy
ran again and again is said to have been retried, not left to look like an enqueue loop.
"""

import re

import pytest
from django.test import override_settings

from django_threadmill.aliases import threadmill_backend
from django_threadmill.exceptions import DrainDidNotEmpty
from django_threadmill.retry import ExponentialBackoff
from django_threadmill.task import task as threadmill_task
from django_threadmill.testing import Threadmill
from django_threadmill.testing.flushing import flushed_around
from testproject.example.tasks import echo
from tests.conftest import tasks_setting


def test_a_second_alias_with_the_same_key_prefix_forgets_its_queues_between_tests(
    redis_url: str, key_prefix: str
) -> None:
    tasks = tasks_setting(redis_url, key_prefix)
    with_another = {**tasks, "other": {**tasks["default"], "QUEUES": []}}  # any queue
    for _test in range(2):  # two tests, each adding the alias, flushed around each
        with flushed_around(), override_settings(TASKS=with_another):
            echo.using(backend="other", queue_name="imports").enqueue(1)
            assert threadmill_backend("other").broker.queues() == ["imports"]


@threadmill_task(retry=ExponentialBackoff(base_delay=0.01, factor=1, max_attempts=50, jitter=0))
def polls_a_service_that_stays_down() -> None:
    """Retried every 10 ms, up to 50 attempts, as a task polling for a result might be."""
    raise ConnectionError("the service is down")


def test_a_drain_bound_reached_by_retries_says_they_were_retries(threadmill: Threadmill) -> None:
    """The error said only that the task ran that many times, and blamed an enqueue loop: a
    task that enqueues nothing, retried by its policy, left the test looking for one."""
    result = polls_a_service_that_stays_down.enqueue()
    named = (
        "'tests.testing.test_added_alias_and_retried_bound.polls_a_service_that_stays_down' "
        "ran 5 times "
        "(4 of them retries under its retry policy: its result's errors say why each "
        "attempt failed). "
    )
    with pytest.raises(DrainDidNotEmpty, match=re.escape(named)):
        threadmill.drain(max_tasks=5)
    result.refresh()
    assert len(result.errors) == 5
