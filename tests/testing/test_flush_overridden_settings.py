"""flush() under one TASKS entry empties the keys every pipeline of that alias, location and key
prefix writes, so each of them forgets what it remembered of those keys.

A test's override of TASKS with other options (the same key prefix) gets a pipeline of its own.
It once kept remembering the queues it had registered across the flush between two tests, so
the second test's tasks went to a queue Redis no longer listed: the admin and the reaper, which
find queues outside QUEUES through that list, did not see it.
"""

from django.test import override_settings

from django_threadmill.aliases import threadmill_backend
from django_threadmill.testing import flush
from testproject.example.tasks import echo
from tests.conftest import tasks_setting


def test_a_flush_under_the_tests_settings_is_one_for_an_overrides_pipeline_too(
    redis_url: str, key_prefix: str
) -> None:
    tuned = override_settings(TASKS=tasks_setting(redis_url, key_prefix, result_ttl=77))
    for _test in range(2):  # two tests, each under the override, flushed between them
        with tuned:
            echo.using(queue_name="emails").enqueue(1)
            assert threadmill_backend("default").broker.queues() == ["emails"]
        flush()
