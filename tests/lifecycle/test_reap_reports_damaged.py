"""threadmill_reap counts the damaged records a pass sets aside, and a dry run those it would.

Before, reap.lua's count of records set aside was dropped on the way back: a dry run said
nothing of them, and a real pass's summary (stdout and the INFO line) did not count them.
"""

import logging

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from tests.support import output_of

from .support import run, wait_for_expiry
from .tasks import plain

pytestmark = pytest.mark.usefixtures("logging_put_back")


def redis_state(redis_client: redis.Redis, key_prefix: str) -> dict[str, object]:
    """Return every key of the test's prefix with its type and contents (the server holds
    the keys of every test its process ran before: reading them all took a minute)."""
    readers = {
        "hash": redis_client.hgetall,
        "zset": lambda key: redis_client.zrange(key, 0, -1, withscores=True),
        "list": lambda key: redis_client.lrange(key, 0, -1),
        "set": redis_client.smembers,
        "string": redis_client.get,
    }
    return {
        key: (kind, readers[kind](key))
        for key in redis_client.scan_iter(match=f"{key_prefix}:*", count=1000)
        if (kind := redis_client.type(key)) in readers
    }


@pytest.fixture
def damaged(backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis) -> list[str]:
    """Expire two running attempts in ``emails`` and one in ``default``, with each running
    record replaced by a string; return the damaged ids."""
    ids = [plain.using(queue_name="emails").enqueue().id for _ in range(2)]
    ids.append(plain.enqueue().id)
    for queue in ("emails", "default"):
        run(broker, queue)
    plain.using(queue_name="emails").enqueue()  # a ready one beside them, left alone
    for task_id in ids:
        queue = task_id.rpartition("@")[2]
        redis_client.set(broker.queue_keys(queue).record(task_id), "garbage")
    wait_for_expiry(broker, redis_client, "emails")
    wait_for_expiry(broker, redis_client)
    return ids


def test_dry_run_counts_the_records_it_would_set_aside_and_changes_nothing(
    damaged: list[str],
    redis_client: redis.Redis,
    key_prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    before = redis_state(redis_client, key_prefix)
    assert before

    with caplog.at_level(logging.INFO, logger="django_threadmill"):
        output = output_of("threadmill_reap", "--dry-run")

    assert "Would settle queue=emails released=0 failed=0 retried=0 stale=0 set_aside=2" in output
    assert "Would settle queue=default released=0 failed=0 retried=0 stale=0 set_aside=1" in output
    assert (
        "Reap pass dry_run=True released=0 failed=0 retried=0 stale=0 set_aside=3 "
        "workflow_steps_advanced=0"
    ) in caplog.messages
    assert not [m for m in caplog.messages if m.startswith("Damaged records set aside")]
    assert redis_state(redis_client, key_prefix) == before


def test_a_pass_counts_the_records_it_set_aside(
    damaged: list[str],
    broker: Broker,
    redis_client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="django_threadmill"):
        output = output_of("threadmill_reap", "--once")

    assert "Settled queue=emails released=0 failed=0 retried=0 stale=0 set_aside=2" in output
    assert "Settled queue=default released=0 failed=0 retried=0 stale=0 set_aside=1" in output
    assert (
        "Reap pass dry_run=False released=0 failed=0 retried=0 stale=0 set_aside=3 "
        "workflow_steps_advanced=0"
    ) in caplog.messages
    assert sorted(record.id for record in broker.damaged(["emails", "default"])) == sorted(damaged)
    for queue in ("emails", "default"):
        assert redis_client.zcard(broker.queue_keys(queue).leases) == 0
    # Set aside already: the next pass finds nothing to count.
    assert "Settled queue=emails released=0 failed=0 retried=0 stale=0 set_aside=0" in (
        output_of("threadmill_reap", "--once")
    )
