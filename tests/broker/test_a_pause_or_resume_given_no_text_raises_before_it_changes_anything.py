"""``Broker.pause`` and ``Broker.resume`` (the calls docs/testing.md points a test to) refuse a
queue, author or reason they cannot take before they write anything: a ``None`` reason or
author paused or resumed the queue and then raised a bare ``TypeError`` from the log line, a
resume leaving idle workers unwoken, and a pause key whose reason read back as its raw JSON; a
reason of several lines or too long, which the command and the admin refuse, is refused too."""

from collections.abc import Callable

import pytest
import redis

from django_threadmill.broker import Broker
from django_threadmill.exceptions import ImproperlyConfiguredThreadmill


def paused(broker: Broker, redis_client: redis.Redis, queue: str) -> bool:
    return bool(redis_client.exists(broker.queue_keys(queue).paused))


@pytest.mark.parametrize(
    ("call", "error", "named"),
    [
        (lambda broker: broker.pause("emails", "ops", None), TypeError, "reason=None"),
        (lambda broker: broker.pause("emails", None, "deploy"), TypeError, "by=None"),
        (lambda broker: broker.pause("emails", "ops", "\udce9"), ValueError, "lone surrogate"),
        (lambda broker: broker.pause("emails", "ops", "a\nb"), ValueError, "reason is 2 lines"),
        (lambda broker: broker.pause("emails", "ops", "x" * 201), ValueError, "201 characters"),
        (lambda broker: broker.pause(None, "ops"), ImproperlyConfiguredThreadmill, "Queue name"),
    ],
)
def test_a_pause_given_no_text_raises_naming_it_and_pauses_nothing(
    broker: Broker,
    redis_client: redis.Redis,
    call: Callable[[Broker], object],
    error: type[Exception],
    named: str,
) -> None:
    with pytest.raises(error, match=named):
        call(broker)

    assert not paused(broker, redis_client, "emails")
    assert not paused(broker, redis_client, "None")


def test_a_resume_given_no_author_raises_naming_it_and_keeps_the_pause(
    broker: Broker, redis_client: redis.Redis
) -> None:
    assert broker.pause("emails", "ops", "deploy")

    with pytest.raises(TypeError, match="by=None"):
        broker.resume("emails", None)  # type: ignore[arg-type]

    assert paused(broker, redis_client, "emails")
    assert broker.resume("emails", "ops")
