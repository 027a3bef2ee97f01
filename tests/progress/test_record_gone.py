"""Progress read back for a task whose record is gone (expired or purged): it raises as
get_result does, where None would say the task has not reported yet (docs/lifecycle.md,
Progress)."""

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultDoesNotExist
from django_threadmill.progress import progress_of
from testproject.example.tasks import add
from tests.backend_support import succeed


def test_progress_of_a_task_whose_record_is_gone_raises_as_get_result_does(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """Read as None, an expired or purged task looked like one that has not reported yet:
    a page polling its progress waited forever."""
    result = add.enqueue(1, 2)
    assert progress_of(result) is None  # there, with no report yet
    succeed(backend, result.id, 3)
    assert backend.purge_finished("default") == 1

    with pytest.raises(TaskResultDoesNotExist):
        progress_of(result)


def test_a_record_without_a_state_field_still_reads_as_there(
    broker: Broker, redis_client: redis.Redis
) -> None:
    """Only a record that is gone raises: one written by hand without its state (which
    get_result reads as READY) keeps reading its progress."""
    result = add.enqueue(1, 2)
    key = broker.record_key(result.id)
    assert key is not None
    redis_client.hdel(key, "state")
    redis_client.hset(key, mapping={"progress_done": "2", "progress_ms": "1700000000000"})

    found = progress_of(result)
    assert found is not None
    assert (found.done, found.total) == (2, None)
