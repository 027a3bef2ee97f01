"""threadmill_reap --once when Redis stops answering part-way through a pass: what the pass did
before is still printed and logged, and the error says the pass was cut short.

Before, the pass raised from the first queue that found Redis gone: the command printed no
count, not even for the queues it had settled, and the pass's INFO summary was not logged.
"""

import logging
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.broker import Broker
from django_threadmill.compat import task_finished
from tests.servers.redis_server import RedisProcess

from .support import run, wait_for_expiry
from .tasks import plain

pytestmark = pytest.mark.usefixtures("logging_put_back")


@pytest.fixture
def redis_url(durable_redis: RedisProcess) -> str:
    """Run this module on a server of its own, which the test kills."""
    return durable_redis.url


@pytest.fixture
def expired_in_default(broker: Broker, durable_redis: RedisProcess) -> None:
    """Expire one running attempt in ``default``, the first queue a pass reaps."""
    plain.enqueue()
    run(broker)
    client = redis.Redis.from_url(durable_redis.url)
    try:
        wait_for_expiry(broker, client)
    finally:
        client.close()


@pytest.mark.usefixtures("expired_in_default")
def test_once_prints_what_it_settled_before_redis_went_away(
    durable_redis: RedisProcess, caplog: pytest.LogCaptureFixture
) -> None:
    def kill_redis(sender: type, **kwargs: Any) -> None:
        durable_redis.kill()  # once default's attempt is settled: the round's send finds it gone

    task_finished.connect(kill_redis, weak=False)
    out = StringIO()
    try:
        with (
            caplog.at_level(logging.INFO, logger="django_threadmill"),
            pytest.raises(CommandError) as failed,
        ):
            call_command("threadmill_reap", "--once", stdout=out)
    finally:
        task_finished.disconnect(kill_redis)

    # Redis went away before the round's metrics send, which ends each round of batches (one
    # of every queue): the pass stops there, with what it settled counted.
    assert out.getvalue().splitlines() == [
        "Settled queue=default released=0 failed=1 retried=0 stale=0 set_aside=0 incomplete=yes",
        "Settled queue=emails released=0 failed=0 retried=0 stale=0 set_aside=0 incomplete=yes",
        "Settled queue=reports released=0 failed=0 retried=0 stale=0 set_aside=0 incomplete=yes",
    ]
    assert str(failed.value).startswith(
        "Reap pass stopped part-way, Redis stopped answering (the queues not reaped wait for "
        "the next pass): Redis at "
    )
    assert "is unreachable" in str(failed.value)
    assert (
        "Reap pass dry_run=False released=0 failed=1 retried=0 stale=0 set_aside=0 "
        "workflow_steps_advanced=0"
    ) in caplog.messages
