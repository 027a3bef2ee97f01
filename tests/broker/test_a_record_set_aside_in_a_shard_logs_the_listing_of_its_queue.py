"""A record a requeue sets aside in a shard of a sharded queue logs the listing of its queue.

Cancel, requeue and purge log the shard they set a record aside in (``queue=default#2of3.0``).
Before, the command the WARNING told to run named that shard too, ``manage.py threadmill_queue
damaged default#2of3.0``, which the command refuses: no queue has that name.
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


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_shards": {"default": 3}}


def test_the_listing_a_requeue_in_a_shard_logs_lists_the_record(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    task_id = echo.enqueue(1).id
    part = backend.broker.part_of(task_id)
    assert part is not None
    assert part != "default"
    redis_client.set(backend.broker.queue_keys(part).record(task_id), "garbage")

    with caplog.at_level(logging.WARNING, logger="django_threadmill.broker.damaged"):
        assert backend.broker.requeue(task_id) == "damaged"

    [said] = [m for m in caplog.messages if m.startswith("Damaged records set aside")]
    assert f"queue={part} count=1 script=requeue backend=default " in said, said
    command = said.split(" or manage.py ", 1)[1].split(", shows", 1)[0]
    assert shlex.split(command) == ["threadmill_queue", "damaged", "default"]
    assert task_id in output_of(*shlex.split(command)), said
