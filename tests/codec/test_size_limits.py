"""Size limits end to end: max_payload_bytes against what Redis itself takes, counted as stored."""

import tracemalloc
from collections.abc import Iterator

import pytest
import redis
from django.core.checks import Warning
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.checks import check_redis
from django_threadmill.compat import task_backends
from django_threadmill.exceptions import BrokerUnavailable
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.servers.redis_server import RedisProcess, redis_process

MIB = 2**20
ECHO = "testproject.example.tasks.echo"
# The payload of echo() with no arguments, as enqueue writes it.
EMPTY_PAYLOAD = f'{{"path":"{ECHO}","args":[],"kwargs":{{}},"priority":0,"run_after_ms":null}}'


@pytest.fixture
def small_bulk_redis() -> Iterator[RedisProcess]:
    """A Redis that takes no argument over 1 MB, as a managed Redis may be configured."""
    with redis_process("--proto-max-bulk-len", "1mb") as server:
        yield server


def current_backend() -> ThreadmillTaskBackend:
    backend = task_backends["default"]
    assert isinstance(backend, ThreadmillTaskBackend)
    return backend


@pytest.mark.parametrize(
    ("config", "name"),
    [
        (("--proto-max-bulk-len", "100mb"), "proto-max-bulk-len"),
        (("--client-query-buffer-limit", "128mb"), "client-query-buffer-limit"),
    ],
)
def test_a_payload_limit_above_what_redis_takes_warns_naming_max_payload_bytes(
    config: tuple[str, str], name: str, key_prefix: str
) -> None:
    """Only max_result_bytes was compared with Redis's limits: a max_payload_bytes above them
    passed the checks, and every enqueue of a payload that large failed inside Redis."""
    with (
        redis_process("--appendonly", "yes", *config) as server,
        override_settings(TASKS=tasks_setting(server.url, key_prefix, max_payload_bytes=200 * MIB)),
    ):
        [message] = check_redis(current_backend())
    assert isinstance(message, Warning)
    assert message.id == "threadmill.W006"
    assert f"Redis takes nothing over {name} " in message.msg
    assert "an enqueue may carry" in message.msg
    assert message.hint == (
        f"Raise {name} in redis.conf, or lower OPTIONS['max_payload_bytes'] below it."
    )


def test_an_enqueue_past_proto_max_bulk_len_stores_nothing(
    small_bulk_redis: RedisProcess, key_prefix: str
) -> None:
    """Redis replies "Protocol error" and closes the connection: the client reads that reply,
    or meets the closed connection first, a race (its wording is tested in
    tests/faults/test_busy_redis.py). Either way the call raises, and nothing is stored."""
    setting = tasks_setting(small_bulk_redis.url, key_prefix, max_payload_bytes=4 * MIB)
    with override_settings(TASKS=setting), pytest.raises(BrokerUnavailable):
        echo.enqueue("x" * 2 * MIB)
    client = redis.Redis.from_url(small_bulk_redis.url)
    assert list(client.scan_iter(f"{key_prefix}:*:t:*")) == []
    client.close()


@pytest.mark.parametrize("tasks_options", [{"max_payload_bytes": 200}])
def test_the_limit_counts_the_payload_as_stored_non_ascii_as_its_escape(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    """JSON is stored ASCII, so "é" counts the 6 bytes of \\u00e9 (docs/enqueue.md)."""
    room = 200 - len(EMPTY_PAYLOAD) - len('""')  # what one str argument may take
    echo.enqueue("x" * room)  # at the limit: stored
    echo.enqueue("\u00e9" * (room // 6))
    with pytest.raises(ValueError, match="payload is 201 bytes, above max_payload_bytes=200"):
        echo.enqueue("x" * (room + 1))
    escaped = len(EMPTY_PAYLOAD) + len('""') + 6 * (room // 6 + 1)
    with pytest.raises(ValueError, match=f"payload is {escaped} bytes, above max_payload_bytes"):
        echo.enqueue("\u00e9" * (room // 6 + 1))  # 2 bytes each in UTF-8: it would fit
    assert len(list(redis_client.scan_iter(f"{key_prefix}:*:t:*"))) == 2


@pytest.mark.parametrize("tasks_options", [{"max_payload_bytes": 512 * MIB}])
def test_a_100_mb_argument_is_encoded_once(redis_client: redis.Redis, key_prefix: str) -> None:
    """Peak memory of enqueuing a 100 MB str stays under three times its size: the payload
    JSON (its C encoder over-allocates a quarter while writing) and the bytes sent."""
    echo.enqueue("warm up")  # connect and load the script outside the measurement
    argument = "x" * (100 * MIB)
    tracemalloc.start()
    try:
        result = echo.enqueue(argument)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.args[0] is argument  # kept as given, not copied
    assert peak < 3 * 100 * MIB, f"peak {peak / MIB:.0f} MiB"
    [stored] = [key for key in redis_client.scan_iter(f"{key_prefix}:*:t:{result.id}")]
    assert redis_client.hstrlen(stored, "payload") == len(EMPTY_PAYLOAD) + 100 * MIB + 2
