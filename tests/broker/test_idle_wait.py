"""An idle worker's BLPOP blocks no longer than fits the socket timeout: a read that outlasts it
reads as Redis being unreachable (docs/design.md, Idle workers block, they do not poll)."""

from collections.abc import Callable, Iterator

import pytest
import redis

from django_threadmill.broker import Broker, NewTask
from django_threadmill.broker.wake import BLOCK_S, IdleWaits, idle_block_s

from .conftest import WORKER

SHORT_S = 1  # a socket timeout under BLOCK_S, which OPTIONS allow


@pytest.mark.parametrize(
    ("socket_timeout_s", "block_s"),
    [(None, BLOCK_S), (10.0, BLOCK_S), (6.0, 3.0), (1.0, 0.5), (0.001, 0.001), (0.0001, 0.001)],
)
def test_a_blpop_blocks_for_half_a_short_socket_timeout(
    socket_timeout_s: float | None, block_s: float
) -> None:
    assert idle_block_s(socket_timeout_s) == block_s


@pytest.mark.parametrize(
    "tasks_options",
    [{"socket_timeout": SHORT_S}, {"connection_options": {"socket_timeout": SHORT_S}}],
    ids=["socket_timeout", "connection_options"],
)
def test_an_idle_wait_longer_than_the_socket_timeout_ends_without_an_error(
    broker: Broker, enqueue: Callable[..., NewTask]
) -> None:
    """The BLPOP blocked for the whole wait and its read timed out: BrokerUnavailable."""
    assert broker.wait_for_work(["default"], worker_id=WORKER, timeout_s=2 * SHORT_S) is False
    enqueue()
    assert broker.wait_for_work(["default"], worker_id=WORKER, timeout_s=2 * SHORT_S) is True


@pytest.fixture
def short_client(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url, decode_responses=True, socket_timeout=SHORT_S)
    yield client
    client.close()


def test_waiter_threads_block_within_the_socket_timeout(
    broker: Broker, short_client: redis.Redis, key_prefix: str
) -> None:
    """Queues in several slots of a cluster get one waiter thread each: their BLPOPs blocked
    for BLOCK_S, and the first read to time out ended the wait as an error."""
    waits = IdleWaits(
        lambda: short_client, lambda _: short_client, broker.translated_errors, SHORT_S
    )
    key = (("a", "b"), WORKER)
    groups = [[f"{key_prefix}:wake-a"], [f"{key_prefix}:wake-b"]]
    try:
        assert waits.wait(key, groups, 3 * SHORT_S) is None
        short_client.rpush(groups[1][0], 1)
        assert waits.wait(key, groups, 3 * SHORT_S) == {groups[1][0]}
    finally:
        waits.wake(key, groups)  # stops and joins the waiter threads
