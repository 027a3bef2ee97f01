"""progress.lua: the latest report of a held attempt, fenced by its token; a final outcome keeps
it, a retry or a requeue starts the next attempt without it."""

from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Broker, Lease, Outcome, ProgressReport
from django_threadmill.broker.keys import QueueKeys
from django_threadmill.broker.scripts import ScriptName
from django_threadmill.codec.progress import PROGRESS_FIELDS
from tests.support import command_calls

from .conftest import WORKER, finish, start

ERROR = '{"exception_class_path":"ValueError","traceback":"boom"}'


def report(
    lease: Lease, done: float = 3, total: float | None = 10, note: str = ""
) -> ProgressReport:
    return ProgressReport(lease=lease, done=done, total=total, note=note)


@pytest.fixture
def stored(redis_client: redis.Redis, keys: QueueKeys) -> Callable[[Lease], list[str | None]]:
    """Return done, total and note as a task's record holds them (progress_ms left out)."""

    def read(lease: Lease) -> list[str | None]:
        return redis_client.hmget(keys.record(lease.task_id), PROGRESS_FIELDS[:3])

    return read


def test_a_reserved_or_running_attempt_takes_its_latest_report(
    broker: Broker,
    reserve: Callable[[], Lease],
    stored: Callable[[Lease], list[str | None]],
    redis_client: redis.Redis,
    keys: QueueKeys,
) -> None:
    lease = reserve()
    before_ms = broker.server_time_ms()
    assert broker.send_progress([report(lease, 1, None)]) == 1  # reserved: its start is held
    assert stored(lease) == ["1", "", ""]
    assert broker.start(WORKER, [start(lease)]) == []
    assert broker.send_progress([report(lease, 2.5, 10, "rows <b>")]) == 1
    assert stored(lease) == ["2.5", "10", "rows <b>"]
    reported_ms = int(redis_client.hget(keys.record(lease.task_id), "progress_ms") or 0)
    assert before_ms <= reported_ms <= broker.server_time_ms()  # the Redis clock


@pytest.mark.parametrize("outcome", [Outcome.SUCCESSFUL, Outcome.FAILED])
def test_a_final_outcome_keeps_the_last_report(
    broker: Broker,
    running: Lease,
    stored: Callable[[Lease], list[str | None]],
    outcome: Outcome,
) -> None:
    assert broker.send_progress([report(running, 7, 10, "seven")]) == 1
    assert broker.finish(WORKER, [finish(running, outcome, ERROR)]) == []
    assert stored(running) == ["7", "10", "seven"]


@pytest.mark.parametrize("held", ["both scripts", "only the finish script"])
def test_a_report_riding_the_finish_call_is_written_before_the_outcome(
    broker: Broker,
    running: Lease,
    stored: Callable[[Lease], list[str | None]],
    redis_client: redis.Redis,
    state_of: Callable[[str], str | None],
    held: str,
) -> None:
    """The report goes as EVAL, with its source, so it runs first even when Redis holds the
    finish script but not the progress one (its first report, or a single finish call that
    reloaded only its own script after a restart): sent again after the outcome, it would be
    fenced out."""
    if held == "both scripts":
        broker.send_progress([report(running, 1)])
    else:
        redis_client.script_flush()
        redis_client.script_load(broker._scripts[ScriptName.FINISH].script)
    redis_client.config_resetstat()
    assert broker.finish(WORKER, [finish(running)], [report(running, 10, 10, "last")]) == []
    assert state_of(running.task_id) == "successful"
    assert stored(running) == ["10", "10", "last"]  # written after the outcome, it was fenced
    sent = command_calls(redis_client)
    assert (sent["eval"], sent["evalsha"]) == (1, 1)


def test_a_late_report_of_a_finished_attempt_changes_nothing(
    broker: Broker, running: Lease, stored: Callable[[Lease], list[str | None]]
) -> None:
    broker.finish(WORKER, [finish(running)], [report(running, 10, 10, "last")])
    assert broker.send_progress([report(running, 3, 10, "from a thread left behind")]) == 0
    assert stored(running) == ["10", "10", "last"]


def test_a_late_report_of_a_reaped_attempt_changes_nothing(
    broker: Broker,
    running: Lease,
    stored: Callable[[Lease], list[str | None]],
    expire_lease: Callable[[str], None],
    state_of: Callable[[str], str | None],
) -> None:
    broker.send_progress([report(running, 4, 10, "before the pause")])
    expire_lease(running.task_id)
    assert broker.finish("", [finish(running, Outcome.FAILED, ERROR)]) == []  # the reaper
    assert state_of(running.task_id) == "failed"
    assert broker.send_progress([report(running, 5, 10, "after the pause")]) == 0
    assert stored(running) == ["4", "10", "before the pause"]


def test_a_report_of_a_lease_reserved_again_is_fenced_out(
    broker: Broker, reserve: Callable[[], Lease], stored: Callable[[Lease], list[str | None]]
) -> None:
    old = reserve()
    assert broker.release([old]) == 1
    [again] = broker.acquire("default", 1).reservations
    assert again.lease.token != old.token
    assert broker.send_progress([report(old, 9)]) == 0
    assert broker.send_progress([report(again.lease, 1)]) == 1
    assert stored(old) == ["1", "10", ""]


def test_a_retry_and_a_requeue_start_without_the_failed_attempts_progress(
    broker: Broker,
    reserve: Callable[[], Lease],
    redis_client: redis.Redis,
    keys: QueueKeys,
) -> None:
    retried, failed = reserve(), reserve()
    broker.send_progress([report(retried), report(failed)])
    retry = finish(retried, Outcome.RETRY, ERROR)._replace(retry_delay_ms=3_600_000)
    assert broker.finish(WORKER, [retry, finish(failed, Outcome.FAILED, ERROR)]) == []
    assert redis_client.hmget(keys.record(retried.task_id), PROGRESS_FIELDS) == [None] * 4
    assert redis_client.hget(keys.record(failed.task_id), "progress_done") == "3"
    assert broker.requeue(failed.task_id) == "requeued"
    assert redis_client.hmget(keys.record(failed.task_id), PROGRESS_FIELDS) == [None] * 4


def test_a_record_that_cannot_be_read_is_skipped(
    broker: Broker,
    reserve: Callable[[], Lease],
    redis_client: redis.Redis,
    keys: QueueKeys,
    stored: Callable[[Lease], list[str | None]],
) -> None:
    damaged, good = reserve(), reserve()
    redis_client.delete(keys.record(damaged.task_id))
    redis_client.rpush(keys.record(damaged.task_id), "written by hand")
    assert broker.send_progress([report(damaged), report(good)]) == 1
    assert redis_client.lrange(keys.record(damaged.task_id), 0, -1) == ["written by hand"]
    assert stored(good) == ["3", "10", ""]


def test_reports_of_several_queues_go_in_one_call_each(
    broker: Broker, enqueue: Callable[..., object], redis_client: redis.Redis
) -> None:
    for queue in ("default", "emails", "default"):
        enqueue(queue)
    leases = [
        r.lease for queue in ("default", "emails") for r in broker.acquire(queue, 5).reservations
    ]
    broker.send_progress([report(leases[0])])  # loads the script
    redis_client.config_resetstat()
    assert broker.send_progress([report(lease) for lease in leases]) == 3
    assert command_calls(redis_client) == {
        "evalsha": 2,  # one per queue, in one round trip
        "time": 2,
        "hmget": 3,  # per task: the fence (state and token)
        "hset": 3,  # per task: the four progress fields
    }


def test_a_reaped_reservation_goes_back_to_ready_without_its_report(
    broker: Broker,
    reserve: Callable[[], Lease],
    redis_client: redis.Redis,
    keys: QueueKeys,
    expire_lease: Callable[[str], None],
) -> None:
    """A task reports while its start notice is held (its record still says reserved); its
    worker dies before the notice goes out. The reaper puts it back in ready, as it puts back
    any reservation: the next attempt starts without the dead one's report, as after a retry."""
    lease = reserve()
    assert broker.send_progress([report(lease, 9, 10, "nearly")]) == 1
    expire_lease(lease.task_id)

    assert broker.reap("default", 100).released == [lease.task_id]

    assert redis_client.hmget(keys.record(lease.task_id), PROGRESS_FIELDS) == [None] * 4
