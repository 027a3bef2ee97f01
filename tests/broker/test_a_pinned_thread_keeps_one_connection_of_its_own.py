"""A thread inside ``Broker.pinned()`` (the ack writer, the prefetcher) calls Redis over one
connection of its own, taken from no pool; it still connects afresh in a new round of fresh
connections, and when the server closed it since its last call
(docs/worker.md, A connection of its own)."""

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from django_threadmill.broker import Broker
from django_threadmill.broker.pinned import OneConnectionPool, PinnedClient
from django_threadmill.broker.raw_replies import RAW
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


def test_a_connection_the_server_closed_since_its_last_call_is_opened_afresh(
    redis_url: str, raw_client: redis.Redis
) -> None:
    """The sync client's calls are not tried again: the look before each call is what keeps a
    call from failing on a connection the server closed (an idle timeout, a restart, a request
    refused as too large)."""
    shared = ReconnectingPool.from_url(
        redis_url, reconnects=Reconnects(), retry=Retry(NoBackoff(), 0)
    )
    client = redis.Redis.from_pool(OneConnectionPool(shared))
    first = client.client_id()
    raw_client.client_kill_filter(_id=first)

    assert client.client_id() != first
    client.close()


@pytest.fixture
def pinned_client(redis_url: str) -> Iterator[PinnedClient]:
    """A thread's own client, whose calls time out after 0.2 s."""
    shared = ReconnectingPool.from_url(
        redis_url, reconnects=Reconnects(), socket_timeout=0.2, decode_responses=True
    )
    client = PinnedClient(connection_pool=OneConnectionPool(shared))
    yield client
    client.connection_pool.disconnect()


def test_an_error_reply_leaves_the_connection_as_it_was(pinned_client: PinnedClient) -> None:
    first = pinned_client.client_id()
    pinned_client.set("a string", "1")

    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        pinned_client.lpush("a string", "x")
    assert pinned_client.client_id() == first


def test_a_call_cut_short_drops_the_connection_and_leaves_no_reply_for_the_next(
    pinned_client: PinnedClient, raw_client: redis.Redis
) -> None:
    first = pinned_client.client_id()

    with pytest.raises(redis.TimeoutError):
        pinned_client.blpop(["nothing comes"], timeout=2)  # its reply would come after 2 s
    raw_client.lpush("nothing comes", "late")  # what the dropped wait would have taken
    assert pinned_client.client_id() != first
    assert pinned_client.ping() is True
    assert raw_client.lrange("nothing comes", 0, -1) == [b"late"]


def test_replies_are_read_as_the_call_asks(pinned_client: PinnedClient) -> None:
    pinned_client.set("k", "é")

    assert pinned_client.get("k") == "é"
    assert pinned_client.execute_command("GET", "k", **RAW) == "é".encode()


def test_under_redis_cluster_a_thread_pins_nothing_and_builds_no_client(broker: Broker) -> None:
    """A cluster client reads the slot map as it is built: the writer's start must not."""
    on_a_cluster = Broker(replace(broker.settings, cluster=True))

    with on_a_cluster.pinned():
        assert "_shared_client" not in vars(on_a_cluster)
