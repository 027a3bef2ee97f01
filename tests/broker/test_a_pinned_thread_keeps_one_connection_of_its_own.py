"""A thread inside ``Broker.pinned()`` (the ack writer, the prefetcher) calls Redis over one
connection of its own, taken from no pool; it still connects afresh in a new round of fresh
connections, and looks at a connection that sat unused before calling on it
(docs/worker.md, A connection of its own)."""

import threading
from collections.abc import Callable

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from django_threadmill.broker import Broker
from django_threadmill.broker.pinned import IDLE_CHECK_S, OneConnectionPool
from django_threadmill.broker.reconnects import ReconnectingPool, Reconnects


def in_a_thread[T](work: Callable[[], T]) -> T:
    """Return what ``work`` returns when run in a thread of its own (pins are per thread)."""
    done: list[T] = []
    thread = threading.Thread(target=lambda: done.append(work()))
    thread.start()
    thread.join()
    assert done, "the thread's work raised (see the captured output)"
    return done[0]


def test_a_pinned_thread_s_calls_share_one_connection_no_other_thread_uses(
    broker: Broker, raw_client: redis.Redis
) -> None:
    shared_id = broker.client.client_id()

    def pinned_ids() -> tuple[list[int], list[int], int]:
        with broker.pinned():
            ids = [broker.client.client_id() for _ in range(3)]
            # Another thread meanwhile gets the pooled client, not this thread's connection.
            others = [in_a_thread(lambda: broker.client.client_id()) for _ in range(2)]
        return ids, others, broker.client.client_id()

    ids, others, after = pinned_ids()

    assert len(set(ids)) == 1
    assert ids[0] != shared_id
    assert ids[0] not in others
    assert after == shared_id or after in others  # the pooled client's again
    listed = {int(client["id"]) for client in raw_client.client_list()}
    assert ids[0] not in listed  # closed at the end of the block


def test_a_pinned_thread_runs_the_scripts_over_its_own_connection(broker: Broker) -> None:
    broker.client.script_flush()  # its first call loads the script again (NOSCRIPT)

    def acquire() -> int:
        with broker.pinned():
            return broker.client.client_id() if broker.acquire_from({"default": 1}) else 0

    assert in_a_thread(acquire) != 0


def test_a_new_round_of_fresh_connections_reconnects_a_pinned_thread(broker: Broker) -> None:
    def ids_across_a_round() -> tuple[int, int]:
        with broker.pinned():
            before = broker.client.client_id()
            broker.reconnects.demoted()  # what a call that met a demoted server starts
            return before, broker.client.client_id()

    before, after = in_a_thread(ids_across_a_round)

    assert before != after


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def pinned_without_retries(redis_url: str) -> tuple[redis.Redis, Clock]:
    """A pinned client whose calls are not tried again: a call on a closed connection fails."""
    shared = ReconnectingPool.from_url(
        redis_url, reconnects=Reconnects(), retry=Retry(NoBackoff(), 0)
    )
    clock = Clock()
    return redis.Redis.from_pool(OneConnectionPool(shared, clock)), clock


def test_a_connection_closed_while_unused_is_opened_afresh_before_the_next_call(
    pinned_without_retries: tuple[redis.Redis, Clock], raw_client: redis.Redis
) -> None:
    client, clock = pinned_without_retries
    first = client.client_id()
    raw_client.client_kill_filter(_id=first)  # a server's idle timeout, a restart
    clock.now += IDLE_CHECK_S + 0.1

    assert client.client_id() != first
    client.close()


def test_calls_back_to_back_are_not_looked_at_first(
    pinned_without_retries: tuple[redis.Redis, Clock], raw_client: redis.Redis
) -> None:
    client, _ = pinned_without_retries
    raw_client.client_kill_filter(_id=client.client_id())

    with pytest.raises(redis.ConnectionError):
        client.ping()  # the look is skipped: the call fails, and redis-py drops the connection
    assert client.ping()
    client.close()
