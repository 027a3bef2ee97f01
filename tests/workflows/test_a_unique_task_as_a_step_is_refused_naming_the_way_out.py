"""A unique task (``unique_for``) cannot be a workflow step: ``enqueue()`` refuses it before
anything is stored, and says how to run its code as a step. ``Task.using`` takes no
``unique_for``, so the way out is a second task without it (the refusal once said to "use the
task without unique_for", which no call gives)."""

from datetime import timedelta

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import InvalidTask
from django_threadmill.task import task
from django_threadmill.workflows import chain, step

from .tasks import number


@task(unique_for=timedelta(minutes=5))
def send_digest(n: int) -> int:
    return n


def test_a_unique_step_is_refused_with_a_fix_the_api_allows(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    before = redis_client.dbsize()

    with pytest.raises(InvalidTask) as refused:
        chain(step(number, 1), step(send_digest)).enqueue()

    message = str(refused.value)
    assert "send_digest" in message
    assert "unique_for" in message
    assert "second @task" in message  # a fix Django's Task.using cannot give: a new task
    with pytest.raises(TypeError):
        send_digest.using(unique_for=None)  # type: ignore[call-arg]
    assert redis_client.dbsize() == before
