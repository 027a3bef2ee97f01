"""The reaper at its edges: a lease scored by hand, what one metrics send carries, a pass cut
short by a stop, a queue whose done index holds a key of another type, a retry policy that
calls sys.exit.

Before, a running attempt's lease whose score was no whole number of ms (``-inf``, set to
reap it now) failed every reap pass with a ValueError: ``threadmill_reap`` crashed with a
traceback and a worker's supervisor exited 1 at its first pass. A pass sent its metrics and
done-index ids once, at its end: one script call carried every id it settled, a pass cut
short by a stop sent none of them, and a send failing in one queue failed the whole pass,
the counts of ``--once`` unprinted (docs/lifecycle.md, When a worker dies: leases and the
reaper). And a retry policy that raised SystemExit ended the supervisor, silently, at the
reap pass that asked it (docs/lifecycle.md, Retries).
"""

import sys
from collections.abc import Collection, Sequence
from datetime import timedelta

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Lease
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.retry import RetryContext
from django_threadmill.task import task
from django_threadmill.worker.reaper import reap_once
from tests.support import Command, running, worker

from .support import run
from .tasks import plain


def exits(context: RetryContext) -> timedelta | None:
    """A retry policy that ends the process it runs in."""
    sys.exit(3)


@task(retry=exits)
def exiting_policy() -> None:
    """Carry a policy that calls sys.exit: the reaper asks it when its lease lapses."""


# Holds the reaper's third task_finished (the next batch's first) until the process ends.
HOLD_THE_SECOND_BATCH = """
import sys, threading
import django
django.setup()
from django.core.management import execute_from_command_line
from django_threadmill.compat import task_finished
heard = []
def hold(sender, task_result, **kwargs):
    heard.append(task_result.id)
    if len(heard) == 3:
        print("holding the second batch", flush=True)
        threading.Event().wait()
task_finished.connect(hold, weak=False)
execute_from_command_line(["manage.py", *sys.argv[1:]])
"""


def ended(command: Command, code: int) -> str:
    """Wait for ``command`` to exit with ``code``; return its log; close it."""
    try:
        assert command.wait() == code, command.log
        return command.log
    finally:
        command.close()


def expire_by_hand(broker: Broker, redis_client: redis.Redis, scores: list[str]) -> list[Lease]:
    """Run one task per score and set its lease's score to it, as an operator would."""
    for _ in scores:
        plain.enqueue()
    leases = run(broker)
    keys = broker.queue_keys("default")
    for lease, score in zip(leases, scores, strict=True):
        redis_client.zadd(keys.leases, {lease.task_id: score})
    return leases


def test_a_lease_scored_by_hand_is_reaped_by_the_command(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
) -> None:
    leases = expire_by_hand(broker, redis_client, ["-inf", "-1e300", "0.5"])
    reaper = Command(redis_url, key_prefix, "threadmill_reap", "--once", lease_ttl_s=1.0)
    log = ended(reaper, 0)

    assert "Settled queue=default released=0 failed=3 retried=0 stale=0" in log
    errors = [str(backend.get_result(lease.task_id).errors[0].traceback) for lease in leases]
    assert "; deadline unknown. " in errors[0]
    assert "; deadline unknown. " in errors[1]
    assert "; deadline 1970-01-01T00:00:00.000+00:00. " in errors[2]


def test_a_supervisor_reaps_a_lease_scored_by_hand_and_runs_on(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
) -> None:
    [lease] = expire_by_hand(broker, redis_client, ["-inf"])
    ended(worker(redis_url, key_prefix, "--burst", lease_ttl_s=1.0), 0)
    assert backend.get_result(lease.task_id).status == TaskResultStatus.FAILED


def test_each_batch_sends_its_own_outcomes(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expire_by_hand(broker, redis_client, ["0"] * 7)
    done = broker.queue_keys("default").done
    indexed: list[int] = []
    send = broker.send_metrics_each

    def counted(
        *, trimming: Sequence[str] = (), leaving_out: Collection[str] = ()
    ) -> tuple[list[str], dict[str, BrokerUnavailable]]:
        sent = send(trimming=trimming, leaving_out=leaving_out)
        indexed.append(redis_client.zcard(done))
        return sent

    monkeypatch.setattr(broker, "send_metrics_each", counted)

    assert reap_once(backend, batch_size=3).failed == 7

    assert indexed == [3, 6, 7]  # default's three batches, emails and reports in the first


def test_a_pass_cut_short_by_a_stop_has_sent_what_its_batches_settled(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
) -> None:
    leases = expire_by_hand(broker, redis_client, ["1", "2", "3", "4"])
    reaper = Command(
        redis_url,
        key_prefix,
        "threadmill_reap",
        "--once",
        "--batch-size",
        "2",
        lease_ttl_s=1.0,
        code=HOLD_THE_SECOND_BATCH,
    )
    with running(reaper, ready="holding the second batch"):
        pass  # then SIGTERM: the held pass is left behind, and the command exits 0

    statuses = {backend.get_result(lease.task_id).status for lease in leases}
    assert statuses == {TaskResultStatus.FAILED}  # every settlement stands, none half-made
    keys = broker.queue_keys("default")
    assert redis_client.zcard(keys.leases) == 0
    first_batch = {lease.task_id for lease in leases[:2]}
    assert set(redis_client.zrange(keys.done, 0, -1)) == first_batch
    assert redis_client.hget(keys.stats, "failed") == "2"


def test_a_done_index_of_another_type_fails_its_queue_only(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
) -> None:
    [lease] = expire_by_hand(broker, redis_client, ["0"])
    redis_client.set(broker.queue_keys("emails").done, "written by hand")
    log = ended(Command(redis_url, key_prefix, "threadmill_reap", "--once", lease_ttl_s=1.0), 1)

    counts = "released=0 failed={} retried=0 stale=0 set_aside=0"
    assert f"Settled queue=default {counts.format(1)}\n" in log
    assert f"Settled queue=emails {counts.format(0)} incomplete=yes\n" in log
    assert f"Settled queue=reports {counts.format(0)}\n" in log
    assert "CommandError: Reap of queue emails failed, the other queues were reaped:" in log
    assert redis_client.zrange(broker.queue_keys("default").done, 0, -1) == [lease.task_id]


def test_a_retry_policy_that_exits_fails_its_task_not_the_supervisor(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
) -> None:
    task_id = exiting_policy.enqueue().id
    [lease] = run(broker)
    redis_client.zadd(broker.queue_keys("default").leases, {lease.task_id: 0})

    log = ended(worker(redis_url, key_prefix, "--burst", lease_ttl_s=1.0), 0)

    assert f"Retry policy raised task_id={task_id} task={exiting_policy.module_path}" in log
    assert backend.get_result(task_id).status == TaskResultStatus.FAILED
