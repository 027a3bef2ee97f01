"""manage.py threadmill_reap --once when one queue's pass fails: the others' counts are printed
and the error names the queue that failed.

Before, the pass settled the other queues' leases, but the command printed none of their counts
and its error ("a value of the wrong kind in one of this backend's keys") named no queue.
"""

from io import StringIO

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus

from .support import run, wait_for_expiry
from .tasks import plain

pytestmark = pytest.mark.usefixtures("logging_put_back")


def test_once_prints_what_the_other_queues_settled_and_names_the_queue_that_failed(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    task_id = plain.using(queue_name="emails").enqueue().id
    run(broker, "emails")
    wait_for_expiry(broker, redis_client, "emails")
    redis_client.set(broker.queue_keys("default").leases, "not a zset")
    out = StringIO()

    with pytest.raises(CommandError) as failed:
        call_command("threadmill_reap", "--once", stdout=out)

    assert "Settled queue=emails released=0 failed=1 retried=0 stale=0" in out.getvalue()
    assert (
        "Settled queue=default released=0 failed=0 retried=0 stale=0 set_aside=0 incomplete=yes"
    ) in out.getvalue()
    assert str(failed.value).startswith(
        "Reap of queue default failed, the other queues were reaped: Redis at "
    )
    assert "wrong kind" in str(failed.value)
    assert backend.get_result(task_id).status == TaskResultStatus.FAILED
