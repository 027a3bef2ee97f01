"""A purge whose queue's ``done`` or ``damaged`` key holds another type names that key, and
deletes nothing.

Before, purge.lua, the one operator's script that did not check its keys' types first, failed
at its first read of ``done`` with "… in one of this backend's keys (WRONGTYPE … script: <sha>,
on @user_script:72.) … delete that key": the operator was told to delete a key it did not
name, and each rerun failed the same. A ``damaged`` of another type failed the call at the
first record to set aside, after the finished records before it were deleted, uncounted
(docs/lifecycle.md, Keys of another type).
"""

from collections.abc import Callable
from io import StringIO

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.testing import drain
from testproject.example.tasks import echo

REFUSAL = "WRONGTYPE Operation against a key holding the wrong kind of value"
FINISHED = 4


def purge_command() -> None:
    call_command("threadmill_queue", "purge", "default", stdout=StringIO())


def purge_api(backend: ThreadmillTaskBackend) -> Callable[[], object]:
    return lambda: backend.purge_finished("default", TaskResultStatus.SUCCESSFUL)


def test_a_done_index_of_another_type_is_named_by_the_command_and_the_api(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    done = broker.queue_keys("default").done
    redis_client.set(done, "another program's value")

    with pytest.raises(CommandError) as refused:
        purge_command()
    assert f"({REFUSAL} in {done})" in str(refused.value)
    with pytest.raises(BrokerUnavailable) as raised:
        purge_api(backend)()
    assert f"({REFUSAL} in {done})" in str(raised.value)


def test_a_damaged_set_of_another_type_is_named_before_any_result_is_deleted(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    keys = broker.queue_keys("default")
    ids = [echo.enqueue(n).id for n in range(FINISHED)]
    drain()
    unreadable = ids[-1]
    # Last in the done index, so the call deleted every other record before it met this one:
    # results finished in the same millisecond sort by id.
    [(_, last_ms)] = redis_client.zrange(keys.done, -1, -1, withscores=True)
    redis_client.zadd(keys.done, {unreadable: last_ms + 1})
    redis_client.delete(keys.record(unreadable))
    redis_client.set(keys.record(unreadable), "garbage")
    redis_client.set(keys.damaged, "another program's value")

    with pytest.raises(CommandError) as refused:
        purge_command()

    assert f"({REFUSAL} in {keys.damaged})" in str(refused.value)
    assert sorted(redis_client.zrange(keys.done, 0, -1)) == sorted(ids)
    assert [redis_client.hget(keys.record(task_id), "state") for task_id in ids[:-1]] == [
        "successful"
    ] * (FINISHED - 1)
