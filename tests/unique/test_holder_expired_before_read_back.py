"""Unique tasks at the edges: a holder that finishes and expires between the enqueue script's
reply and the read-back of its result."""

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Lease, Outcome
from django_threadmill.compat import TaskResultStatus
from tests.backend_support import finish, start

from .tasks import refresh

pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"result_ttl": 0.001}  # a finished record is gone a millisecond after its finish


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    found = redis.Redis.from_url(redis_url, decode_responses=True)
    yield found
    found.close()


def wait_until_gone(client: redis.Redis, key: str) -> None:
    """Poll Redis until ``key`` expired, or fail saying it never did."""
    for _ in range(10_000):
        if not client.exists(key):
            return
    raise AssertionError(f"{key} never expired")


@pytest.fixture
def expire_on_read_back(
    backend: ThreadmillTaskBackend, client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str, Lease], None]:
    """Make the first record read of a running holder finish it and wait for its record to
    expire first: what a worker and a short result_ttl do between the script and the read."""
    broker = backend.broker

    def arm(holder: str, lease: Lease) -> None:
        pending = [holder]

        def settle(asked: object) -> None:
            if pending and (asked == holder or (isinstance(asked, list) and holder in asked)):
                pending.clear()
                finish(backend, lease, Outcome.SUCCESSFUL, "1")
                wait_until_gone(client, broker.record_key(holder) or "")

        def wrap(name: str) -> None:
            read = getattr(broker, name)
            if asyncio.iscoroutinefunction(read):

                async def aread(asked: Any) -> Any:
                    settle(asked)
                    return await read(asked)

                monkeypatch.setattr(broker, name, aread)
            else:

                def sread(asked: Any) -> Any:
                    settle(asked)
                    return read(asked)

                monkeypatch.setattr(broker, name, sread)

        for name in ("record", "records", "arecord"):
            wrap(name)

    return arm


def test_enqueue_stores_when_its_holder_expired_before_the_read_back(
    backend: ThreadmillTaskBackend, expire_on_read_back: Callable[[str, Lease], None]
) -> None:
    first = refresh.enqueue(1)
    expire_on_read_back(first.id, start(backend, first.id))
    again = refresh.enqueue(1)
    assert again.id != first.id
    assert backend.get_result(again.id).status == TaskResultStatus.READY
    assert refresh.enqueue(1).id == again.id  # it holds the key now


def test_aenqueue_stores_when_its_holder_expired_before_the_read_back(
    backend: ThreadmillTaskBackend, expire_on_read_back: Callable[[str, Lease], None]
) -> None:
    first = refresh.enqueue(2)
    expire_on_read_back(first.id, start(backend, first.id))
    again = asyncio.run(refresh.aenqueue(2))
    assert again.id != first.id
    assert backend.get_result(again.id).status == TaskResultStatus.READY


def test_enqueue_many_stores_when_a_holder_expired_before_the_read_back(
    backend: ThreadmillTaskBackend, expire_on_read_back: Callable[[str, Lease], None]
) -> None:
    first = refresh.enqueue(3)
    expire_on_read_back(first.id, start(backend, first.id))
    results = backend.enqueue_many(refresh, [((3,), {}), ((4,), {}), ((3,), {})])
    ids = [result.id for result in results]
    assert first.id not in ids
    assert ids[0] == ids[2] != ids[1]
    assert [backend.get_result(i).status for i in ids] == [TaskResultStatus.READY] * 3
