"""enqueue.lua and finish.lua with unique guards: one unfinished task per key and window."""

from collections.abc import Callable
from dataclasses import replace

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Guard, GuardKind, NewTask, Outcome
from django_threadmill.broker.keys import QueueKeys
from tests.support import wait_until

from .conftest import finish, new_task, start

WINDOW_MS = 300_000


def unique(digest: str = "abc", window_ms: int = WINDOW_MS) -> NewTask:
    return replace(new_task(), guard=Guard(kind=GuardKind.UNIQUE, name=digest, value_ms=window_ms))


def test_first_unique_task_is_stored_and_holds_its_key(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    task = unique()
    enqueued = broker.enqueue("default", [task])
    assert (enqueued.stored, enqueued.existing) == (1, {})
    assert redis_client.get(f"{keys.unique_prefix}abc") == task.id
    assert 0 < redis_client.pttl(f"{keys.unique_prefix}abc") <= WINDOW_MS
    assert redis_client.hget(keys.record(task.id), "unique") == "abc"


def test_plain_task_writes_no_unique_field(
    enqueue: Callable[..., NewTask], keys: QueueKeys, redis_client: redis.Redis
) -> None:
    assert redis_client.hget(keys.record(enqueue().id), "unique") is None


def test_duplicate_of_a_ready_task_writes_nothing(
    broker: Broker, snapshot: Callable[[], dict[str, object]]
) -> None:
    first = unique()
    broker.enqueue("default", [first])
    before = snapshot()
    second = unique()
    enqueued = broker.enqueue("default", [second])
    assert (enqueued.stored, enqueued.existing) == (0, {second.id: first.id})
    assert snapshot() == before


def test_duplicate_of_a_running_task_is_refused(broker: Broker) -> None:
    first = unique()
    broker.enqueue("default", [first])
    [reservation] = broker.acquire("default", 1).reservations
    broker.start("w", [start(reservation.lease)])
    assert broker.enqueue("default", [unique()]).stored == 0


def test_equal_tasks_in_one_batch_are_one(broker: Broker) -> None:
    first, second, other = unique(), unique(), unique("other")
    enqueued = broker.enqueue("default", [first, second, other])
    assert (enqueued.stored, enqueued.existing) == (2, {second.id: first.id})


def test_finish_releases_the_key_so_the_next_enqueue_is_stored(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    broker.enqueue("default", [unique()])
    [reservation] = broker.acquire("default", 1).reservations
    assert broker.finish("w", [finish(reservation.lease)]) == []
    assert not redis_client.exists(f"{keys.unique_prefix}abc")
    assert broker.enqueue("default", [unique()]).stored == 1


def test_a_retry_keeps_the_key(broker: Broker, keys: QueueKeys, redis_client: redis.Redis) -> None:
    task = unique()
    broker.enqueue("default", [task])
    [reservation] = broker.acquire("default", 1).reservations
    broker.finish("w", [finish(reservation.lease, Outcome.RETRY, '{"e": 1}')])
    assert redis_client.get(f"{keys.unique_prefix}abc") == task.id
    assert broker.enqueue("default", [unique()]).stored == 0


def test_finish_leaves_a_key_that_names_another_task(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    broker.enqueue("default", [unique()])
    [reservation] = broker.acquire("default", 1).reservations
    redis_client.set(f"{keys.unique_prefix}abc", "someone-else@default")  # window ended, retaken
    broker.finish("w", [finish(reservation.lease, Outcome.FAILED, '{"e": 1}')])
    assert redis_client.get(f"{keys.unique_prefix}abc") == "someone-else@default"


def test_a_cancelled_holder_is_taken_over(
    backend: ThreadmillTaskBackend, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    first = unique()
    backend.broker.enqueue("default", [first])
    assert backend.cancel(first.id)  # cancel does not release keys: enqueue sees it is final
    second = unique()
    assert backend.broker.enqueue("default", [second]).stored == 1
    assert redis_client.get(f"{keys.unique_prefix}abc") == second.id
    assert redis_client.pttl(f"{keys.unique_prefix}abc") > 0


def test_a_holder_that_is_gone_is_taken_over(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    redis_client.set(f"{keys.unique_prefix}abc", "expired-long-ago@default")
    assert broker.enqueue("default", [unique()]).stored == 1


def test_the_key_ends_with_its_window_even_if_the_task_never_ran(
    broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    broker.enqueue("default", [unique(window_ms=50)])
    wait_until(lambda: not redis_client.exists(f"{keys.unique_prefix}abc"), "window end", 5)
    assert broker.enqueue("default", [unique()]).stored == 1
    assert redis_client.zcard(keys.ready) == 2
