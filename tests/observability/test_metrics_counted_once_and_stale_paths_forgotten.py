"""The reaper's counts survive a lost reply, a refused send counts nothing, stale paths go.

- A reap pass whose finish call lost its reply (Redis recorded the expired attempts, then the
  connection dropped) counted none of them, and the next pass never saw them again (their
  leases were gone): ``failed`` and ``expired`` missed them for good, and the done index too.
  The reaper now marks what it records as its own and settles such attempts again first;
  those its lost call recorded answer "already" and count once.
- metrics.lua counted the outcomes into ``P:stats`` and the done index before it met a
  ``P:metrics:paths`` (or, with no ids to add, a ``P:done``) of another type and failed; Redis
  does not undo a script's writes, and the send was kept and sent again, so every send counted
  the same outcomes again. The keys are now checked before the first write.
- ``P:metrics:paths`` never forgot a path: a renamed or generated task path held one of the 100
  labels and exported its series for good, and once 100 were taken every new path was "other".
  A path no send counted for PATH_TTL_MS is dropped with its lifetime series.
"""

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Lease, Outcome
from django_threadmill.broker.keys import QueueKeys
from django_threadmill.broker.metrics import MAX_TASK_PATHS, PATH_TTL_MS
from django_threadmill.broker.scripts import ScriptName
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.worker.reaper import reap_pass
from tests.broker.conftest import WORKER, finish, new_task, redis_now_ms
from tests.lifecycle.support import run
from tests.lifecycle.tasks import plain
from tests.observability.lost_replies import Losses, lose_replies

PLAIN = "tests.lifecycle.tasks.plain"
ECHO = "testproject.example.tasks.echo"  # the path tests.broker.conftest.new_task stores


@pytest.fixture
def losses(broker: Broker, monkeypatch: pytest.MonkeyPatch) -> Losses:
    """Lose the reply of the next finish call; Redis runs it first if ``ran``."""
    losses = lose_replies(broker, monkeypatch, ScriptName.FINISH)
    losses.left = 1
    return losses


def expired(broker: Broker, redis_client: redis.Redis, count: int) -> list[Lease]:
    """Enqueue, reserve and start ``count`` plain tasks, then let their leases lapse."""
    for _ in range(count):
        plain.enqueue()
    leases = run(broker)
    keys = broker.queue_keys("default")
    redis_client.zadd(keys.leases, {lease.task_id: 1 for lease in leases}, xx=True)
    return leases


def counted(client: redis.Redis, keys: QueueKeys) -> tuple[dict[str, str], dict[str, str], int]:
    """Return the outcome counters, the lifetime metrics and the size of the done index."""
    return client.hgetall(keys.stats), client.hgetall(keys.metrics), client.zcard(keys.done)


@pytest.mark.parametrize("ran", [True, False], ids=["landed", "never-ran"])
def test_a_reap_pass_whose_reply_was_lost_is_counted_once(
    ran: bool,
    backend: ThreadmillTaskBackend,
    broker: Broker,
    losses: Losses,
    redis_client: redis.Redis,
) -> None:
    keys = broker.queue_keys("default")
    expired(broker, redis_client, 2)
    losses.ran = ran
    first = reap_pass(backend)
    assert list(first.failures) == ["default"]
    assert (first.failed, counted(redis_client, keys)) == (0, ({}, {}, 0))

    second = reap_pass(backend)  # settles them again first: "already", or recorded now
    assert (second.failed, second.stale) == (2, 0)
    reap_pass(backend)  # nothing left to count

    expected = {f"{PLAIN}|failed": "2", f"{PLAIN}|expired": "2"}
    assert counted(redis_client, keys) == ({"failed": "2"}, expected, 2)
    assert not broker.tally


def test_what_another_reaper_settled_meanwhile_is_not_counted_again(
    backend: ThreadmillTaskBackend, broker: Broker, losses: Losses, redis_client: redis.Redis
) -> None:
    keys = broker.queue_keys("default")
    expired(broker, redis_client, 2)
    losses.ran = False
    assert list(reap_pass(backend).failures) == ["default"]
    other = Broker(broker.settings)  # another process's reaper settles them
    attempts = other.reap("default", 10).expired
    failed = [finish(a.lease, Outcome.FAILED, '{"x": 1}') for a in attempts]
    assert other.finish("", failed) == []
    other.send_metrics()

    again = reap_pass(backend)  # its own try again: another reaper's outcome, stale

    assert (again.failed, again.stale) == (0, 2)
    assert counted(redis_client, keys)[0] == {"failed": "2"}


def finished(broker: Broker, outcome: Outcome) -> None:
    """Enqueue, reserve and record one echo task of "default" as ``outcome``."""
    broker.enqueue("default", [new_task()])
    [reservation] = broker.acquire("default", 1).reservations
    assert broker.finish(WORKER, [finish(reservation.lease, outcome, '{"x": 1}')]) == []


@pytest.mark.parametrize(
    ("key", "outcome"),
    [("metrics_paths", Outcome.SUCCESSFUL), ("done", Outcome.RETRY)],
    ids=["paths", "done-with-no-ids-to-add"],
)
def test_a_send_refused_by_a_key_of_another_type_counts_nothing_until_it_is_deleted(
    key: str, outcome: Outcome, broker: Broker, redis_client: redis.Redis
) -> None:
    keys = broker.queue_keys("default")
    wrong = getattr(keys, key)
    redis_client.set(wrong, "another program's value")
    finished(broker, outcome)
    for _ in range(3):
        with pytest.raises(BrokerUnavailable, match="holds a value of the wrong kind"):
            broker.send_metrics()
    assert redis_client.hgetall(keys.stats) == {}

    redis_client.delete(wrong)
    broker.send_metrics()

    assert redis_client.hgetall(keys.stats) == {outcome.value: "1"}
    assert redis_client.hget(keys.metrics, f"{ECHO}|{outcome.value}") == "1"


def test_a_path_unseen_for_its_ttl_is_forgotten_with_its_series(
    broker: Broker, redis_client: redis.Redis
) -> None:
    keys = broker.queue_keys("default")
    now = redis_now_ms(redis_client)
    recent = {f"app.tasks.t{n}": now - PATH_TTL_MS + 60_000 for n in range(MAX_TASK_PATHS - 1)}
    redis_client.zadd(keys.metrics_paths, {**recent, "app.renamed": now - PATH_TTL_MS - 1})
    series = {"successful": 4, "run:3": 4, "run_ms": 80}
    for path in ("app.renamed", "app.tasks.t0"):
        redis_client.hset(keys.metrics, mapping={f"{path}|{n}": v for n, v in series.items()})

    broker.send_metrics(trimming=["default"])  # the reaper's pass, with nothing to count

    assert redis_client.zscore(keys.metrics_paths, "app.renamed") is None
    assert set(redis_client.hkeys(keys.metrics)) == {f"app.tasks.t0|{n}" for n in series}
    finished(broker, Outcome.SUCCESSFUL)
    broker.send_metrics()  # the freed label goes to the next new path, not to "other"
    assert redis_client.hget(keys.metrics, f"{ECHO}|successful") == "1"
    assert redis_client.zcard(keys.metrics_paths) == MAX_TASK_PATHS


def test_paths_kept_as_a_set_by_an_earlier_version_are_kept_as_seen_now(
    broker: Broker, redis_client: redis.Redis
) -> None:
    keys = broker.queue_keys("default")
    redis_client.sadd(keys.metrics_paths, ECHO, "app.tasks.older")
    finished(broker, Outcome.SUCCESSFUL)
    before = redis_now_ms(redis_client)
    broker.send_metrics()

    seen = dict(redis_client.zrange(keys.metrics_paths, 0, -1, withscores=True))
    assert set(seen) == {ECHO, "app.tasks.older"}
    assert all(score >= before for score in seen.values())
    assert redis_client.hget(keys.metrics, f"{ECHO}|successful") == "1"
