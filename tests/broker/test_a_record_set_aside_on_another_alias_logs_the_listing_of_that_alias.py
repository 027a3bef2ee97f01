"""A record set aside on an alias other than "default" logs ``backend=`` and the listing of
that alias (``--backend``).

A project with two aliases, "default" and "bulk", both with a queue "default". Before, the
WARNING named no alias and told to run ``manage.py threadmill_queue damaged default``: run as
written, that listed "default"'s queue, which held no damaged record, and not "bulk"'s.
"""

import logging
import shlex
from collections.abc import Iterator

import pytest
import redis
from django.test import override_settings

from django_threadmill.aliases import threadmill_backend
from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.support import output_of

# call_command runs the commands' logging setup in the test's own process.
pytestmark = pytest.mark.usefixtures("logging_put_back")


@pytest.fixture
def bulk(redis_url: str, key_prefix: str) -> Iterator[ThreadmillTaskBackend]:
    """The backend of "bulk", beside "default" on the same Redis, with the same queues."""
    tasks = tasks_setting(redis_url, key_prefix)
    with override_settings(TASKS={**tasks, "bulk": tasks["default"]}):
        yield threadmill_backend("bulk")


def test_the_listing_a_set_aside_logs_lists_the_record_on_its_own_alias(
    bulk: ThreadmillTaskBackend, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    task_id = echo.using(backend="bulk").enqueue(1).id
    redis_client.set(bulk.broker.queue_keys("default").record(task_id), "garbage")

    with caplog.at_level(logging.WARNING, logger="django_threadmill.broker.damaged"):
        assert bulk.broker.acquire("default", 1).reservations == []

    [said] = [m for m in caplog.messages if m.startswith("Damaged records set aside")]
    assert "queue=default count=1 script=acquire backend=bulk " in said, said
    command = said.split(" or manage.py ", 1)[1].split(", shows", 1)[0]
    assert shlex.split(command) == ["threadmill_queue", "damaged", "default", "--backend", "bulk"]
    assert task_id in output_of(*shlex.split(command)), said
