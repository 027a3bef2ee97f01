"""A reaping loop's hold (worker/reap_hold.py), pass by pass against a real Redis on a clock the
test moves: after a pass Redis did not answer or refused writes in, or a stall of the loop, no
lease is settled until live workers had a renewal interval and a slack to renew theirs; nor
for that long after Redis restarted or failed over. The commands under a real stall,
a real outage and a real restart:
tests/lifecycle/test_reaper_holds_after_an_outage_or_a_stall.py."""

import logging
import re

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.worker.reap_hold import RENEWAL_SLACK_S, ReapHold
from tests.servers.redis_server import RedisProcess

from .support import run
from .tasks import plain

LEASE_TTL_S = 1.0  # this folder's (conftest.py): renewals every third of a second
HOLD_S = LEASE_TTL_S / 3 + RENEWAL_SLACK_S
SHOWN_HOLD_S = round(HOLD_S, 1)  # as the line shows it


@pytest.fixture
def redis_url(durable_redis: RedisProcess) -> str:
    """A server of the module's own, which a test kills and starts again."""
    return durable_redis.url


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def hold(backend: ThreadmillTaskBackend, clock: Clock) -> ReapHold:
    return ReapHold(backend.settings.renewal_s, clock=clock)


def expired_lease(broker: Broker, redis_client: redis.Redis) -> str:
    """Enqueue a task, start it as a worker that then dies, and let its lease lapse at once.

    Its deadline is put a second in the past, as if its worker had been silent that long:
    waited for, the lapse put a second of Redis time between two passes that the test's clock
    did not see, which a slow run could take for a jump of the Redis clock.
    """
    task_id = plain.enqueue().id
    run(broker)
    seconds, _ = redis_client.time()
    leases = broker.queue_keys("default").leases
    redis_client.zadd(leases, {task_id: (int(seconds) - 1) * 1000}, xx=True)
    return task_id


@pytest.fixture
def lapsed_after_a_first_pass(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    hold: ReapHold,
    clock: Clock,
) -> None:
    """A first pass at 1000.0, which settles nothing; then a lease that lapses."""
    assert settled_at(hold, clock, 1000.0, backend) == 0
    expired_lease(broker, redis_client)


def settled_at(hold: ReapHold, clock: Clock, at: float, backend: ThreadmillTaskBackend) -> int:
    """Run the loop to ``at``, seen running every ``tick_s`` as it sleeps, then a pass there;
    return how many leases the pass settled."""
    while clock.now + hold.tick_s < at:
        clock.now += hold.tick_s
        hold.tick()
    clock.now = at
    report = hold.run(backend)
    return sum(counts.failed + counts.retried for counts in report.queues.values())


def held_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "Expired leases held" in r.getMessage()]


@pytest.mark.usefixtures("lapsed_after_a_first_pass")
def test_a_first_pass_and_passes_on_time_settle_leases(
    backend: ThreadmillTaskBackend,
    hold: ReapHold,
    clock: Clock,
) -> None:
    assert settled_at(hold, clock, 1010.0, backend) == 1


def test_after_a_pass_redis_did_not_answer_leases_wait_a_renewal_interval(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    durable_redis: RedisProcess,
    hold: ReapHold,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="django_threadmill")
    expired_lease(broker, redis_client)
    durable_redis.kill()
    with pytest.raises(BrokerUnavailable):
        hold.run(backend)
    durable_redis.start()
    assert settled_at(hold, clock, 1000.1, backend) == 0  # the hold starts as Redis answers
    assert settled_at(hold, clock, 1000.1 + HOLD_S - 0.01, backend) == 0
    assert settled_at(hold, clock, 1000.1 + HOLD_S, backend) == 1
    assert held_lines(caplog) == [
        f"Expired leases held hold_s={SHOWN_HOLD_S:g} reason=Redis did not answer the last "
        "reap pass (live workers renew theirs meanwhile; those still expired then are settled: "
        "docs/lifecycle.md, After an outage or a stall)"
    ]
    assert "Expired leases settled again, the hold over" in caplog.messages


def test_after_a_pass_redis_refused_writes_in_leases_wait_a_renewal_interval(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    hold: ReapHold,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Renewals are writes: while Redis refuses them (a failed snapshot's MISCONF, a replica's
    READONLY, too few replicas), leases lapse as in an outage."""
    caplog.set_level(logging.WARNING, logger="django_threadmill")
    expired_lease(broker, redis_client)
    redis_client.config_set("min-replicas-to-write", 1)  # NOREPLICAS: no replica here
    try:
        with pytest.raises(BrokerUnavailable, match="refuses writes"):
            hold.run(backend)  # refused at its first script: a pass's scripts all may write
    finally:
        redis_client.config_set("min-replicas-to-write", 0)
    assert settled_at(hold, clock, 1000.0, backend) == 0
    assert settled_at(hold, clock, 1000.0 + HOLD_S, backend) == 1
    assert [line.split(" (live")[0] for line in held_lines(caplog)] == [
        f"Expired leases held hold_s={SHOWN_HOLD_S:g} reason=Redis refused writes in the "
        "last reap pass, workers' renewals too"
    ]


@pytest.mark.usefixtures("lapsed_after_a_first_pass")
def test_a_stall_of_the_loop_past_a_renewal_interval_holds_leases(
    backend: ThreadmillTaskBackend,
    hold: ReapHold,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="django_threadmill")
    clock.now = 1001.5  # the loop ran nothing since the pass ended: 1.5 s, past both bounds
    hold.tick()
    assert settled_at(hold, clock, clock.now, backend) == 0
    assert settled_at(hold, clock, clock.now + HOLD_S, backend) == 1
    assert [line.split(" (live")[0] for line in held_lines(caplog)] == [
        f"Expired leases held hold_s={SHOWN_HOLD_S:g} reason=this reaper stalled 1.5s"
    ]


@pytest.mark.usefixtures("lapsed_after_a_first_pass")
def test_a_gap_under_a_second_is_no_stall_even_past_a_short_renewal_interval(
    backend: ThreadmillTaskBackend,
    hold: ReapHold,
    clock: Clock,
) -> None:
    # A third of a second here: a busy host's scheduler may keep a loop that late, time and
    # again, and a hold each time would never settle a lease.
    clock.now = 1000.9
    hold.tick()
    assert settled_at(hold, clock, clock.now, backend) == 1


def test_a_loop_seen_running_is_no_stall_however_long_its_passes(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    hold: ReapHold,
    clock: Clock,
) -> None:
    # A backlog's pass may outlast a renewal interval: its own length is no stall.
    lengths = iter([1000.0, 1000.0, 1000.0 + 10 * LEASE_TTL_S])  # tick, choice, pass's end

    def slow_pass_clock() -> float:
        clock.now = next(lengths, clock.now)
        return clock.now

    hold._clock = slow_pass_clock
    hold.run(backend)
    hold._clock = clock
    expired_lease(broker, redis_client)
    assert settled_at(hold, clock, clock.now + hold.tick_s, backend) == 1


def identity(redis_client: redis.Redis) -> str:
    """The server as the reapers note it: a restart changes its run_id, a promotion its
    replication id."""
    info = redis_client.info()
    return f"{info['run_id']}:{info['master_replid']}"


def server_noted_at(broker: Broker, redis_client: redis.Redis, ms_ago: int) -> None:
    """Say the reapers first saw the server this long ago (as if Redis ran on meanwhile)."""
    now_ms = int(redis_client.time()[0]) * 1000
    redis_client.set(broker.keyspace.server, f"{identity(redis_client)} {now_ms - ms_ago}")


@pytest.mark.usefixtures("lapsed_after_a_first_pass")
def test_a_restart_between_two_passes_holds_leases_until_workers_could_renew(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    durable_redis: RedisProcess,
    hold: ReapHold,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The loop saw no pass fail: Redis went away and came back (its data kept) between two.
    Its new run_id says it restarted; a failover's promoted replica has one of its own."""
    caplog.set_level(logging.INFO, logger="django_threadmill")
    durable_redis.kill()
    durable_redis.start()
    assert settled_at(hold, clock, clock.now + hold.tick_s, backend) == 0
    server_noted_at(broker, redis_client, ms_ago=int(HOLD_S * 1000) + 1)
    assert settled_at(hold, clock, clock.now + HOLD_S, backend) == 1
    [line] = held_lines(caplog)
    assert re.fullmatch(
        r"Expired leases held hold_s=\d+(\.\d)? reason=a new Redis server "
        r"\(restarted or failed over\), first seen \d+\.\ds ago \(live workers .*",
        line,
    ), line
    assert "Expired leases settled again, the hold over" in caplog.messages


def test_a_first_pass_holds_when_the_server_is_new_to_the_reapers(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    hold: ReapHold,
    clock: Clock,
) -> None:
    """A reaper that starts after a restart (a --once from cron) holds as well: the server
    reapers saw before is in Redis, not in the reaper."""
    broker.ms_since_server_seen()  # an earlier reaper's pass, then a restart
    redis_client.set(broker.keyspace.server, "an-earlier-run-id 0")
    expired_lease(broker, redis_client)
    assert settled_at(hold, clock, 1000.0, backend) == 0
    assert hold.held.startswith("a new Redis server (restarted or failed over), first seen 0.")
    server_noted_at(broker, redis_client, ms_ago=int(HOLD_S * 1000) + 1)
    assert settled_at(hold, clock, 1000.0 + HOLD_S, backend) == 1
    assert hold.held == ""


def test_a_redis_clock_that_ran_ahead_of_the_loops_holds_leases(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    hold: ReapHold,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Between two passes the server note's age grew 30 s on the Redis clock while the loop's
    clock moved a tick: the Redis clock jumped (tests/lifecycle/
    test_a_reaper_holds_when_the_redis_clock_jumps_ahead.py steps a real one)."""
    caplog.set_level(logging.WARNING, logger="django_threadmill")
    server_noted_at(broker, redis_client, ms_ago=60_000)
    assert settled_at(hold, clock, 1000.0, backend) == 0  # nothing lapsed yet
    expired_lease(broker, redis_client)
    server_noted_at(broker, redis_client, ms_ago=90_000)
    assert settled_at(hold, clock, clock.now + hold.tick_s, backend) == 0
    assert settled_at(hold, clock, clock.now + HOLD_S, backend) == 1
    [line] = [line.split(" (live")[0] for line in held_lines(caplog)]
    assert re.fullmatch(  # 30 s on Redis's clock, a tick on the loop's
        rf"Expired leases held hold_s={SHOWN_HOLD_S:g} reason=the Redis clock jumped 29\.\ds "
        "ahead of this host's",
        line,
    ), line


@pytest.mark.parametrize("stored", ["", "no-time-here", "0 1 2"], ids=["empty", "no-time", "three"])
def test_a_server_note_missing_or_malformed_holds_nothing(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    hold: ReapHold,
    clock: Clock,
    stored: str,
) -> None:
    """No note to compare with: a first pass ever, or a Redis that kept no data (and no
    lease). The note is then written afresh, and read as the first."""
    if stored:
        redis_client.set(broker.keyspace.server, stored)
    expired_lease(broker, redis_client)
    assert settled_at(hold, clock, 1000.0, backend) == 1
    assert redis_client.get(broker.keyspace.server) == f"{identity(redis_client)} 0"


def test_a_server_note_of_another_type_is_replaced_and_holds_nothing(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    hold: ReapHold,
    clock: Clock,
) -> None:
    """Only something other than django-threadmill writes a list there: it names no server."""
    redis_client.rpush(broker.keyspace.server, "not a note")
    expired_lease(broker, redis_client)
    assert settled_at(hold, clock, 1000.0, backend) == 1
    assert redis_client.type(broker.keyspace.server) == "string"
