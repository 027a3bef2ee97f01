"""manage.py threadmill_queue damaged / forget-damaged: see what was set aside, then clear it."""

import re

import pytest
import redis
from django.core.management import CommandError

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import echo
from tests.support import output_of


@pytest.fixture
def set_aside(backend: ThreadmillTaskBackend, redis_client: redis.Redis) -> list[str]:
    """Two tasks whose records were replaced by keys of another type, set aside by acquire."""
    ids = [echo.enqueue(n).id for n in range(3)]
    keys = backend.broker.queue_keys("default")
    for task_id in ids[:2]:
        redis_client.delete(keys.record(task_id))
        redis_client.rpush(keys.record(task_id), "garbage")
    reserved = backend.broker.acquire("default", 10).reservations
    assert [r.lease.task_id for r in reserved] == ids[2:]
    return ids[:2]


def test_damaged_lists_each_record_with_its_script_and_reason(set_aside: list[str]) -> None:
    lines = output_of("threadmill_queue", "damaged").splitlines()
    assert len(lines) == 2
    for task_id, line in zip(sorted(set_aside), sorted(lines), strict=True):
        assert re.fullmatch(
            rf"queue=default id={re.escape(task_id)} at=\S+ script=acquire reason=its key "
            r"holds no hash \(WRONGTYPE .*\)",
            line,
        )


def test_nothing_damaged_says_so(backend: ThreadmillTaskBackend) -> None:
    echo.enqueue(1)
    assert output_of("threadmill_queue", "damaged", "default") == "No damaged records in default.\n"


def test_forget_damaged_drops_the_named_entries_then_all(set_aside: list[str]) -> None:
    first, second = set_aside
    assert output_of("threadmill_queue", "forget-damaged", "default", first) == (
        "Forgot 1 damaged record(s) of queue default.\n"
    )
    listed = output_of("threadmill_queue", "damaged")
    assert first not in listed
    assert second in listed
    assert output_of("threadmill_queue", "forget-damaged", "default", "--all").endswith(
        "\nForgot 1 damaged record(s) of queue default: those listed above, read and dropped "
        "in one step.\n"
    )
    assert output_of("threadmill_queue", "damaged", "default") == "No damaged records in default.\n"


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize("args", [["default"], ["default", "some-id", "--all"]])
def test_forget_damaged_needs_ids_or_all_not_both(args: list[str]) -> None:
    with pytest.raises(CommandError, match=r"Name the entries to drop .* or pass --all"):
        output_of("threadmill_queue", "forget-damaged", *args)


def test_damaged_lists_a_configured_queue_whose_name_redis_lost(
    set_aside: list[str], backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """Redis's set of queues can lose a name (a restart from an older snapshot, a DEL): the
    listing read only that set, so it answered "No damaged records in any queue" while a
    QUEUES entry held two; the admin and the reaper read QUEUES too."""
    redis_client.delete(backend.broker.keyspace.queues)

    lines = output_of("threadmill_queue", "damaged").splitlines()

    assert sorted(line.split(" id=")[1].split()[0] for line in lines) == sorted(set_aside)
