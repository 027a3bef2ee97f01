"""A result that arrives alone costs its finish call only: no metrics, counters or trims in it.

Counted from INFO commandstats, which counts the commands a script runs too.
"""

from collections.abc import Callable

import redis

from django_threadmill.broker import Broker, Lease

from .conftest import WORKER, finish


def calls(client: redis.Redis) -> dict[str, int]:
    stats = client.info("commandstats")
    return {
        name.removeprefix("cmdstat_"): int(value["calls"])
        for name, value in stats.items()
        if name != "cmdstat_config|resetstat"
    }


def test_a_lone_success_costs_seven_commands(
    broker: Broker, reserve: Callable[[], Lease], redis_client: redis.Redis
) -> None:
    lease = reserve()
    broker.finish(WORKER, [finish(lease)])  # loads the script: the next call is the steady one
    lone = reserve()
    redis_client.config_resetstat()
    assert broker.finish(WORKER, [finish(lone)]) == []
    assert calls(redis_client) == {
        "evalsha": 1,
        "time": 1,  # the done index's score, on the Redis clock
        "hmget": 1,  # the fence: state and token
        "hset": 1,  # the outcome
        "pexpireat": 1,  # result_ttl
        "zrem": 1,  # out of the leases
        "zadd": 1,  # into the done index
    }
