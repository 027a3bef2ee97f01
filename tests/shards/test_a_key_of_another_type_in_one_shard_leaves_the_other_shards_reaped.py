"""A reap pass on a sharded queue whose one shard holds a key of another type.

Before, the reap calls of every shard ran in one round trip, and one shard's error stood for the
whole queue: the other shards' replies were dropped, though their calls had run. Their expired
reservations went back to ready, but their expired running attempts, reported and dropped, were
never settled: a dead worker's tasks there stayed RUNNING every pass, for as long as the key
stayed, and ``threadmill_reap --once`` said the queue failed, its counts 0
(docs/lifecycle.md, Keys of another type).
"""

import logging
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.worker.reaper import reap_once, reap_pass
from tests.lifecycle.support import run
from tests.lifecycle.tasks import plain

pytestmark = pytest.mark.usefixtures("logging_put_back")

PART_FAILED = "Reap of a queue part failed, its other parts go on queue=default part="


def lapsed_beside_a_broken_shard(broker: Broker, count: int) -> tuple[list[TaskResult], str]:
    """Start ``count`` tasks of "default" as a worker would and lapse their leases (their
    worker died); make the ``leases`` key of a shard holding none of them a string. Return
    the tasks, and that shard's part."""
    results = [plain.enqueue() for _ in range(count)]
    leases = run(broker)
    lapsed_ms = broker.server_time_ms() - 1000
    for lease in leases:
        keys = broker.queue_keys(broker.part_in("default", lease.task_id))
        broker.client.zadd(keys.leases, {lease.task_id: lapsed_ms}, xx=True)
    held = {broker.part_in("default", result.id) for result in results}
    broken = next(part for part in broker.parts("default") if part not in held)
    broker.client.set(broker.queue_keys(broken).leases, "not a zset")
    return results, broken


def test_the_other_shards_expired_attempts_are_settled_and_the_broken_one_named_once(
    backend: ThreadmillTaskBackend, broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    """Two rounds (a batch of 1 per shard): the broken shard is called, and named, once."""
    results, broken = lapsed_beside_a_broken_shard(broker, 2)

    with caplog.at_level(logging.WARNING, logger="django_threadmill.worker.reaper"):
        report = reap_pass(backend, batch_size=1)

    assert [backend.get_result(r.id).status for r in results] == [TaskResultStatus.FAILED] * 2
    assert report.queues["default"].failed == 2
    assert list(report.failures) == report.partly == ["default"]  # incomplete, not failed whole
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Reap of")]
    assert len(said) == 1, said
    assert said[0].startswith(f"{PART_FAILED}{broken} error=Redis at "), said
    assert "wrong kind" in said[0]
    with pytest.raises(BrokerUnavailable, match="wrong kind"):  # said every pass the key stays
        reap_once(backend)


def test_once_prints_the_settled_counts_and_says_part_of_the_queue_failed(
    backend: ThreadmillTaskBackend, broker: Broker
) -> None:
    [result], _ = lapsed_beside_a_broken_shard(broker, 1)
    out = StringIO()

    with pytest.raises(CommandError) as failed:
        call_command("threadmill_reap", "--once", stdout=out)

    assert (
        "Settled queue=default released=0 failed=1 retried=0 stale=0 set_aside=0 incomplete=yes\n"
        "Settled queue=emails released=0 failed=0 retried=0 stale=0 set_aside=0\n"
    ) in out.getvalue()
    assert str(failed.value).startswith(
        "Reap of part of queue default failed, the rest was reaped: Redis at "
    ), failed.value
    assert "wrong kind" in str(failed.value)
    assert backend.get_result(result.id).status == TaskResultStatus.FAILED
