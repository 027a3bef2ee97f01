"""A reap pass sends the reap calls of every queue in one round trip and their outcomes and
done-index trims in a second, however many queues there are; a queue whose call fails still
fails alone, and ``threadmill_reap --once`` prints the same counts.

Before, a pass made two round trips per queue, one after the other (its reap call, then its
metrics send and trim): 640 every ``--reap-interval`` for 320 queues, from each supervisor.
"""

import logging
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import task_backends
from tests.conftest import tasks_setting
from tests.lifecycle.support import reserve
from tests.lifecycle.tasks import plain

pytestmark = pytest.mark.usefixtures("logging_put_back")

QUEUES = [f"q{n:02d}" for n in range(40)]
BROKEN = "q17"
# The server's run_id, the reapers' note of it and the time (INFO, GET, TIME), the queues' names
# (SMEMBERS), every queue's reap call, every queue's metrics send and trim, the workflow
# outboxes' sizes (LLEN): one round trip each.
PASS_ROUND_TRIPS = 5


class RoundTrips:
    """Count round trips to Redis: a pipeline sent, or one command sent alone."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        execute = redis.client.Pipeline.execute
        command = redis.Redis.execute_command

        def pipeline_sent(pipe: redis.client.Pipeline, *args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return execute(pipe, *args, **kwargs)

        def command_sent(client: redis.Redis, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(client, redis.client.Pipeline):  # a pipeline only queues it
                self.count += 1
            return command(client, *args, **kwargs)

        monkeypatch.setattr(redis.client.Pipeline, "execute", pipeline_sent)
        monkeypatch.setattr(redis.Redis, "execute_command", command_sent)


@pytest.fixture
def many_queues(redis_url: str, key_prefix: str) -> Iterator[ThreadmillTaskBackend]:
    """The backend with QUEUES, each holding one reservation whose lease lapsed."""
    setting = tasks_setting(redis_url, key_prefix)
    setting["default"]["QUEUES"] = QUEUES
    with override_settings(TASKS=setting):
        backend = task_backends["default"]
        assert isinstance(backend, ThreadmillTaskBackend)
        broker = backend.broker
        call_command("threadmill_reap", "--once", stdout=StringIO())  # scripts loaded
        for queue in QUEUES:
            plain.using(queue_name=queue).enqueue()
            [reservation] = reserve(broker, queue)
            broker.client.zadd(broker.queue_keys(queue).leases, {reservation.lease.task_id: 0})
        yield backend


def settled(queue: str, released: int = 1, incomplete: str = "") -> str:
    return (
        f"Settled queue={queue} released={released} failed=0 retried=0 stale=0 set_aside=0"
        f"{incomplete}"
    )


def test_a_pass_over_many_queues_takes_a_fixed_number_of_round_trips(
    many_queues: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = StringIO()
    trips = RoundTrips(monkeypatch)

    call_command("threadmill_reap", "--once", stdout=out)

    assert trips.count == PASS_ROUND_TRIPS
    assert out.getvalue().splitlines() == [settled(queue) for queue in QUEUES]


@pytest.mark.parametrize(
    ("key", "released"),
    [("leases", 0), ("done", 1)],
    ids=["its-reap-call-fails", "its-trim-fails"],
)
def test_a_queue_whose_call_fails_fails_alone(
    many_queues: ThreadmillTaskBackend,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    key: str,
    released: int,
) -> None:
    keys = many_queues.broker.queue_keys(BROKEN)
    many_queues.broker.client.delete(getattr(keys, key))
    many_queues.broker.client.set(getattr(keys, key), "not of our type")
    out = StringIO()
    trips = RoundTrips(monkeypatch)

    with (
        caplog.at_level(logging.WARNING, logger="django_threadmill"),
        pytest.raises(CommandError) as failed,
    ):
        call_command("threadmill_reap", "--once", stdout=out)

    assert trips.count == PASS_ROUND_TRIPS + 1  # Redis TIME: is Redis itself the problem?
    assert out.getvalue().splitlines() == [
        settled(queue, released, " incomplete=yes") if queue == BROKEN else settled(queue)
        for queue in QUEUES
    ]
    assert str(failed.value).startswith(
        f"Reap of queue {BROKEN} failed, the other queues were reaped: Redis at "
    )
    assert [
        message
        for message in caplog.messages
        if message.startswith("Reap of a queue failed, the others go on")
    ] == [f"Reap of a queue failed, the others go on queue={BROKEN} error={failed.value.__cause__}"]
