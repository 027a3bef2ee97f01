"""A send trims the done index of at most 1,000 expired ids more than it adds, the oldest first.

An index filled while ``result_ttl`` was None, then given one (or a fleet down for days), was
trimmed by one unbounded ZREMRANGEBYSCORE: millions of ids in one script call, Redis held for
seconds. The next sends take the rest (docs/observability.md, Metrics and the done index);
a reaper's pass calls again while ids are left (test_reap_pass_trims_the_done_index_until_empty).
"""

from collections.abc import Callable

import redis

from django_threadmill.broker import Broker, Lease
from django_threadmill.broker.keys import QueueKeys
from tests.support import command_calls

from .conftest import WORKER, finish, redis_now_ms

TRIM_IDS = 1000  # metrics.lua's bound, as docs/observability.md states it
EXPIRED = 2500


def fill_expired(client: redis.Redis, keys: QueueKeys) -> list[str]:
    """Index EXPIRED ids finished long ago (at 1..EXPIRED ms) and one finished now; return the
    expired ones, oldest first."""
    expired = [f"expired-{n:05d}@default" for n in range(EXPIRED)]
    client.zadd(keys.done, {task_id: n + 1 for n, task_id in enumerate(expired)})
    client.zadd(keys.done, {"finished-now@default": redis_now_ms(client)})
    return expired


def test_a_trim_removes_at_most_the_bound_the_oldest_first_and_the_next_sends_the_rest(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    expired = fill_expired(redis_client, keys)
    broker.send_metrics(trimming=["default"])  # the reaper's trim of an idle queue
    left = redis_client.zrange(keys.done, 0, -1)
    assert left == [*expired[TRIM_IDS:], "finished-now@default"]

    redis_client.config_resetstat()
    broker.send_metrics(trimming=["default"])
    calls = command_calls(redis_client)
    assert (calls["zcount"], calls["zremrangebyrank"]) == (1, 1)
    assert redis_client.zcard(keys.done) == EXPIRED - 2 * TRIM_IDS + 1

    broker.send_metrics(trimming=["default"])  # the last 500
    assert redis_client.zrange(keys.done, 0, -1) == ["finished-now@default"]
    redis_client.config_resetstat()
    broker.send_metrics(trimming=["default"])
    assert "zremrangebyrank" not in command_calls(redis_client)  # nothing expired: counted only


def test_a_send_that_adds_ids_trims_as_many_more(
    broker: Broker, reserve: Callable[[], Lease], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    """A part finishing more than the bound a second is trimmed as fast as it fills."""
    expired = fill_expired(redis_client, keys)
    leases = [reserve() for _ in range(3)]
    assert broker.finish(WORKER, [finish(lease) for lease in leases]) == []
    broker.send_metrics()
    left = redis_client.zrange(keys.done, 0, EXPIRED - TRIM_IDS - 3 - 1)
    assert left == expired[TRIM_IDS + 3 :]
    assert redis_client.zcard(keys.done) == EXPIRED - TRIM_IDS - 3 + 1 + 3
