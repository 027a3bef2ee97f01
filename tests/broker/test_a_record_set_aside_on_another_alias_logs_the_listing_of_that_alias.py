"""A record set aside on an alias other than "default" logs ``backend=`` and the listing of
that alias (``--backend``).

A project with two aliases, "default" and "bulk", both with a queue "default". Before, the
WARNING named no alias and told to run ``manage.py threadmill_queue damaged default``: run as
written, that listed "default"'s queue, which held no damaged record, and not "bulk"'s.
"""

import logging
import shlex

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import echo
from tests.support import output_of

# call_command runs the commands' logging setup in the test's own process.
pytestmark = pytest.mark.usefixtures("logging_put_back")


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
