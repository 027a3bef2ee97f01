"""Records whose error count or workflow marker was written by hand, read by acquire, a worker,
the reaper, cancel and requeue: each such task runs or ends like the others beside it.

Before, an error count that is no whole number ("-1", "nan") made acquire announce that many
error texts, a reply the worker could not read: its fetcher thread died with the whole batch
reserved, which came back after the leases lapsed and killed the next worker again. A count
of "-1" or "2.5" that a finish, a reap or a cancel counted on left the error it recorded under
"error:0" or "error:3.5", which no reader shows. A step marker whose index is a digit ``int()``
refuses ("x:²") killed the worker thread that checked it and failed every reap pass (and the
queues after it) while the record was there.
"""

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from tests.support import output_of, run_to_completion, worker

from .support import reserve, run, wait_for_expiry
from .tasks import plain, retried

# call_command runs the command's logging setup in the test's own process.
pytestmark = pytest.mark.usefixtures("logging_put_back")

# Error counts that are no whole number in ASCII digits: each reads as none, in every script
# and in Python alike.
NOT_A_COUNT = ["-1", "nan", "-inf", "2.5", "1e2", "\u0663"]  # the last: ARABIC-INDIC DIGIT THREE
NOT_A_STEP = "abc:\u00b2"  # SUPERSCRIPT TWO: isdigit() takes it, int() refuses it


def enqueue_with(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, field: str, value: str
) -> tuple[list[str], str]:
    """Enqueue three plain tasks and write ``field`` into the middle one's record by hand;
    return every id and the middle one's."""
    ids = [plain.enqueue().id for _ in range(3)]
    redis_client.hset(backend.broker.queue_keys("default").record(ids[1]), field, value)
    return ids, ids[1]


@pytest.mark.parametrize("count", NOT_A_COUNT)
def test_acquire_reserves_a_task_whose_error_count_is_no_count_with_no_errors(
    count: str, backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    ids, odd = enqueue_with(backend, redis_client, "nerrors", count)

    reservations = reserve(broker)

    assert sorted(r.lease.task_id for r in reservations) == sorted(ids)
    assert [r.errors for r in reservations] == [[], [], []]
    assert backend.get_result(odd).errors == []  # read as acquire reads it
    assert broker.damaged(["default"]) == []


def test_a_burst_worker_runs_tasks_with_such_fields_beside_the_others(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    ids = [plain.enqueue().id for _ in range(6)]
    keys = backend.broker.queue_keys("default")
    redis_client.hset(keys.record(ids[1]), "nerrors", "-1")
    redis_client.hset(keys.record(ids[4]), "workflow", NOT_A_STEP)

    run_to_completion(worker(redis_url, key_prefix, "--burst", "--threads", "2"))

    assert {backend.get_result(task_id).status for task_id in ids} == {TaskResultStatus.SUCCESSFUL}


@pytest.mark.parametrize("count", ["-1", "2.5"])
def test_the_reaper_records_its_error_where_readers_find_it(
    count: str, backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    _, odd = enqueue_with(backend, redis_client, "nerrors", count)
    run(broker)
    wait_for_expiry(broker, redis_client)

    output = output_of("threadmill_reap", "--once")

    assert "Settled queue=default released=0 failed=3 retried=0 stale=0 set_aside=0" in output
    result = backend.get_result(odd)
    assert result.status == TaskResultStatus.FAILED
    assert [error.exception_class_path for error in result.errors] == [
        "django_threadmill.exceptions.LeaseExpired"
    ]


def test_cancel_records_its_error_where_readers_find_it(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    _, odd = enqueue_with(backend, redis_client, "nerrors", "-1")

    assert backend.cancel(odd, "not wanted")

    [error] = backend.get_result(odd).errors
    assert error.exception_class_path == "django_threadmill.exceptions.Cancelled"


def test_the_reaper_settles_every_lease_beside_a_step_marker_int_refuses(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    ids = [retried.enqueue().id for _ in range(3)]
    run(broker)
    redis_client.hset(broker.queue_keys("default").record(ids[1]), "workflow", NOT_A_STEP)
    wait_for_expiry(broker, redis_client)

    output = output_of("threadmill_reap", "--once")

    assert "Settled queue=default released=0 failed=0 retried=3 stale=0 set_aside=0" in output
    assert redis_client.zcard(broker.queue_keys("default").leases) == 0


def test_requeue_takes_a_failed_task_whose_step_marker_int_refuses(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    _, odd = enqueue_with(backend, redis_client, "workflow", NOT_A_STEP)
    assert backend.cancel(odd)

    assert backend.requeue(odd)
    assert backend.get_result(odd).status == TaskResultStatus.READY
