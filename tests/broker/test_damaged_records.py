"""One damaged record is one record: every script that walks records handles each by itself.

Damaged records (a key of another type, an index entry without a record, a record in the wrong
state) are planted at random places among good ones, for each script; every good task must
still end exactly once, and every damaged one be set aside in ``P:damaged`` with its reason
and dropped from the index it was found in (docs/lifecycle.md, Damaged records). Records with
garbage in a field the scripts can do without (a score, an error count, a timestamp) are not
damaged: they must end exactly once too.
"""

import random
from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Ack, Broker, Guard, GuardKind, Lease, NewTask, Outcome
from django_threadmill.broker.keys import QueueKeys
from tests.broker.conftest import WORKER, finish, new_task, start

SEEDS = [1, 2, 3]
GOOD = 12  # good tasks per call
# How a record is damaged: a key of another type, or no record at all where an index says one.
UNREADABLE: dict[str, Callable[[redis.Redis, str], object]] = {
    "string": lambda client, key: client.set(key, "garbage"),
    "list": lambda client, key: client.rpush(key, "garbage"),
    "set": lambda client, key: client.sadd(key, "garbage"),
    "zset": lambda client, key: client.zadd(key, {"garbage": 1}),
    "no record": lambda client, key: client.delete(key),
}
# Garbage in fields the scripts can do without: such a task must still run, once.
RECOVERABLE = {"score": "garbage", "nerrors": "garbage", "enqueued_ms": "x", "run_after_ms": "x"}


def damage(client: redis.Redis, keys: QueueKeys, task_id: str, how: str) -> None:
    """Replace the record of ``task_id`` with a key of another type (or with nothing)."""
    client.delete(keys.record(task_id))
    UNREADABLE[how](client, keys.record(task_id))


def pick_damaged(rng: random.Random, leases: list[Lease]) -> dict[str, str]:
    """Shuffle ``leases`` and pick the first ones to damage, one way each: id -> how."""
    rng.shuffle(leases)
    return {lease.task_id: how for lease, how in zip(leases, UNREADABLE, strict=False)}


def plant(client: redis.Redis, keys: QueueKeys, damaged: dict[str, str]) -> None:
    for task_id, how in damaged.items():
        damage(client, keys, task_id, how)


def unreadable_of(damaged: dict[str, str]) -> set[str]:
    """The damaged ids a script can find and set aside (a missing record leaves nothing)."""
    return {task_id for task_id, how in damaged.items() if how != "no record"}


def set_aside(client: redis.Redis, keys: QueueKeys) -> dict[str, str]:
    return client.hgetall(keys.damaged)


@pytest.fixture(params=SEEDS, ids=lambda seed: f"seed{seed}")
def rng(request: pytest.FixtureRequest) -> random.Random:
    """Where and how records are damaged: one run per seed."""
    return random.Random(request.param)


@pytest.fixture
def enqueued(broker: Broker) -> Callable[[int], list[NewTask]]:
    def enqueue(count: int) -> list[NewTask]:
        tasks = [new_task() for _ in range(count)]
        assert broker.enqueue("default", tasks).stored == count
        return tasks

    return enqueue


@pytest.fixture
def reserved(
    broker: Broker, enqueued: Callable[[int], list[NewTask]]
) -> Callable[[int], list[Lease]]:
    def reserve(count: int) -> list[Lease]:
        enqueued(count)
        leases = [r.lease for r in broker.acquire("default", count).reservations]
        assert len(leases) == count
        return leases

    return reserve


@pytest.fixture
def planted(
    rng: random.Random,
    keys: QueueKeys,
    redis_client: redis.Redis,
    reserved: Callable[[int], list[Lease]],
) -> tuple[list[Lease], dict[str, str]]:
    """Reserve tasks, then damage some of their records: the leases, and id -> how."""
    leases = reserved(GOOD + len(UNREADABLE))
    damaged = pick_damaged(rng, leases)
    plant(redis_client, keys, damaged)
    return leases, damaged


def test_acquire_reserves_every_good_task_once_and_sets_the_damaged_aside(
    rng: random.Random, broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    tasks = [new_task() for _ in range(GOOD + len(UNREADABLE) + len(RECOVERABLE) + 1)]
    assert broker.enqueue("default", tasks).stored == len(tasks)
    ids = [task.id for task in tasks]
    rng.shuffle(ids)
    damaged = dict(zip(ids, UNREADABLE, strict=False))
    plant(redis_client, keys, damaged)
    garbled = dict(zip(ids[len(damaged) :], RECOVERABLE, strict=False))
    for task_id, field in garbled.items():
        redis_client.hset(keys.record(task_id), field, RECOVERABLE[field])
    wrong_state = ids[len(damaged) + len(garbled)]
    redis_client.hset(keys.record(wrong_state), "state", "running")
    delayed_ghost = f"{rng.getrandbits(64):x}@default"
    redis_client.zadd(keys.delayed, {delayed_ghost: 1})  # due, with no record
    good = set(ids) - set(damaged) - {wrong_state}

    reserved: list[str] = []
    while True:  # as a fetcher does: look again while a reply says work is there
        acquired = broker.acquire("default", rng.randint(1, 7))
        reserved += [r.lease.task_id for r in acquired.reservations]
        if not acquired.found_work:
            break

    assert sorted(reserved) == sorted(good)  # each good task once, the garbled ones too
    assert set(set_aside(redis_client, keys)) == {*damaged, wrong_state, delayed_ghost}
    assert (
        "acquire: in the ready index in state running"
        in (set_aside(redis_client, keys)[wrong_state])
    )
    assert redis_client.zcard(keys.ready) == redis_client.zcard(keys.delayed) == 0
    assert set(redis_client.zrange(keys.leases, 0, -1)) == good


@pytest.mark.parametrize("script", ["start", "finish"])
def test_start_and_finish_record_every_good_task_once(
    script: str,
    broker: Broker,
    keys: QueueKeys,
    redis_client: redis.Redis,
    planted: tuple[list[Lease], dict[str, str]],
) -> None:
    leases, damaged = planted

    if script == "start":
        rejected = broker.start(WORKER, [start(lease) for lease in leases])
        state = "running"
    else:
        rejected = broker.finish(WORKER, [finish(lease) for lease in leases])
        state = "successful"

    unreadable = unreadable_of(damaged)
    assert {item.lease.task_id: ack for item, ack in rejected} == {
        task_id: Ack.DAMAGED if task_id in unreadable else Ack.MISSING for task_id in damaged
    }
    good = [lease.task_id for lease in leases if lease.task_id not in damaged]
    assert [redis_client.hget(keys.record(task_id), "state") for task_id in good] == (
        [state] * len(good)
    )
    assert set(set_aside(redis_client, keys)) == unreadable
    leased = set(redis_client.zrange(keys.leases, 0, -1))
    assert not leased & unreadable  # dropped with the record set aside
    assert leased - set(damaged) == (set(good) if script == "start" else set())


def test_renew_keeps_every_good_lease_and_reports_the_damaged_lost(
    broker: Broker,
    keys: QueueKeys,
    redis_client: redis.Redis,
    planted: tuple[list[Lease], dict[str, str]],
) -> None:
    leases, damaged = planted
    redis_client.zadd(keys.leases, {lease.task_id: 1 for lease in leases}, xx=True)

    lost = broker.renew(WORKER, leases)

    assert sorted(lost) == sorted(damaged)
    unreadable = unreadable_of(damaged)
    assert set(set_aside(redis_client, keys)) == unreadable
    deadlines = dict(redis_client.zrange(keys.leases, 0, -1, withscores=True))
    assert all(deadlines[lease.task_id] > 1 for lease in leases if lease.task_id not in damaged)
    assert not set(deadlines) & unreadable


def test_release_puts_every_good_task_back_once(
    broker: Broker,
    keys: QueueKeys,
    redis_client: redis.Redis,
    planted: tuple[list[Lease], dict[str, str]],
) -> None:
    leases, damaged = planted
    garbled = next(lease.task_id for lease in leases if lease.task_id not in damaged)
    redis_client.hset(keys.record(garbled), "score", "garbage")

    assert broker.release(leases) == GOOD

    good = {lease.task_id for lease in leases} - set(damaged)
    assert set(redis_client.zrange(keys.ready, 0, -1)) == good
    unreadable = unreadable_of(damaged)
    assert set(set_aside(redis_client, keys)) == unreadable
    assert set(redis_client.zrange(keys.leases, 0, -1)) == set(damaged) - unreadable


def test_reap_settles_every_good_lease_once(
    rng: random.Random,
    broker: Broker,
    keys: QueueKeys,
    redis_client: redis.Redis,
    reserved: Callable[[int], list[Lease]],
) -> None:
    leases = reserved(2 * GOOD + len(UNREADABLE))
    damaged = pick_damaged(rng, leases)
    healthy = [lease for lease in leases if lease.task_id not in damaged]
    running = healthy[:GOOD]
    assert broker.start(WORKER, [start(lease) for lease in running]) == []
    plant(redis_client, keys, damaged)
    redis_client.zadd(keys.leases, {lease.task_id: 1 for lease in leases}, xx=True)

    reaped = broker.reap("default", rng.randint(40, 80))

    assert reaped.looked_at == len(leases)  # the damaged and the ghost one counted too
    assert sorted(reaped.released) == sorted(lease.task_id for lease in healthy[GOOD:])
    assert sorted(e.lease.task_id for e in reaped.expired) == sorted(
        lease.task_id for lease in running
    )
    unreadable = unreadable_of(damaged)
    assert set(set_aside(redis_client, keys)) == unreadable
    assert set(redis_client.zrange(keys.leases, 0, -1)) == {lease.task_id for lease in running}


def test_purge_deletes_every_good_result_and_sets_the_damaged_aside(
    rng: random.Random,
    broker: Broker,
    keys: QueueKeys,
    redis_client: redis.Redis,
    reserved: Callable[[int], list[Lease]],
) -> None:
    leases = reserved(GOOD + len(UNREADABLE))
    assert broker.finish(WORKER, [finish(lease) for lease in leases]) == []
    broker.send_metrics()  # and the done index that purge walks
    damaged = pick_damaged(rng, leases)
    plant(redis_client, keys, damaged)

    assert broker.purge("default", batch_size=rng.randint(2, 5)) == GOOD

    assert redis_client.zcard(keys.done) == 0
    unreadable = unreadable_of(damaged)
    assert set(set_aside(redis_client, keys)) == unreadable
    assert all(redis_client.exists(keys.record(task_id)) for task_id in unreadable)  # kept


@pytest.mark.parametrize(
    ("operation", "index"), [("cancel", "ready"), ("requeue", "done")], ids=["cancel", "requeue"]
)
@pytest.mark.parametrize("how", ["string", "list", "zset"])
def test_an_operator_action_on_a_damaged_record_sets_it_aside(
    operation: str,
    index: str,
    how: str,
    broker: Broker,
    keys: QueueKeys,
    redis_client: redis.Redis,
    reserved: Callable[[int], list[Lease]],
) -> None:
    [lease] = reserved(1)
    if operation == "requeue":
        assert broker.finish(WORKER, [finish(lease, Outcome.FAILED, '{"traceback": ""}')]) == []
    else:
        assert broker.release([lease]) == 1
    damage(redis_client, keys, lease.task_id, how)

    if operation == "cancel":
        answer = broker.cancel(lease.task_id, "{}", 0)
    else:
        answer = broker.requeue(lease.task_id)

    assert answer == "damaged"
    assert f"{operation}: its key holds no hash" in set_aside(redis_client, keys)[lease.task_id]
    assert redis_client.zscore(getattr(keys, index), lease.task_id) is None


def test_enqueue_replaces_damaged_guard_keys_and_stores_every_task(
    rng: random.Random, broker: Broker, keys: QueueKeys, redis_client: redis.Redis
) -> None:
    guarded = []
    planted = {}
    for n in range(GOOD):
        name = f"digest{n}"
        task = new_task()
        guarded.append(
            NewTask(
                id=task.id,
                payload=task.payload,
                priority=0,
                run_after_ms=None,
                guard=Guard(kind=GuardKind.UNIQUE, name=name, value_ms=60_000),
            )
        )
        if rng.random() < 0.5:
            how = rng.choice(["list", "set", "zset"])
            UNREADABLE[how](redis_client, f"{keys.unique_prefix}{name}")
            planted[f"u:{name}"] = how
    holder = f"{rng.getrandbits(64):x}@default"  # a holder whose record is of another type
    redis_client.set(f"{keys.unique_prefix}digest-held", holder)
    redis_client.set(keys.record(holder), "garbage")
    guarded.append(
        NewTask(
            id=new_task().id,
            payload=new_task().payload,
            priority=0,
            run_after_ms=None,
            guard=Guard(kind=GuardKind.UNIQUE, name="digest-held", value_ms=60_000),
        )
    )

    assert broker.enqueue("default", guarded).stored == len(guarded)

    assert set(redis_client.zrange(keys.ready, 0, -1)) == {task.id for task in guarded}
    assert set(set_aside(redis_client, keys)) == {*planted, holder}
    for n in range(GOOD):
        assert redis_client.get(f"{keys.unique_prefix}digest{n}") == guarded[n].id
