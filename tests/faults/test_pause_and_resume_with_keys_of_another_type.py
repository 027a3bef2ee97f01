"""Pause and resume when a queue's ``ready`` or ``wake`` key holds another type.

Pause's SET NX touches neither, so it pauses. Resume deletes the pause, then reads both to push
wake tokens: Redis refuses that read, so the queue is resumed without them. Before, the command
said only "Redis … holds a value of the wrong kind" (exit 1), as if nothing had happened, logged
no "Queue resumed" line, and a sharded queue's other shards got no tokens either. Now they get
theirs, the INFO line is logged, and the command says the queue is resumed, which key holds what
and the fix (docs/lifecycle.md, Keys of another type).
"""

import logging

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.broker.inspect import Inspector
from django_threadmill.exceptions import ResumedNotWoken
from tests.broker.conftest import new_task
from tests.support import run_python

SHARDS = 3


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_shards": {"default": SHARDS}}  # "emails" is one queue, unsharded


def fix_of(alias: str, queue: str, key: str, kind: str) -> str:
    return (
        f"Resumed queue {queue} of backend {alias}, but its idle workers were not woken "
        f"(WRONGTYPE): key {key} holds a string, not a {kind}. Something other than "
        "django-threadmill wrote to it: delete that key, or give each project its own "
        "OPTIONS['key_prefix']. The queue stays resumed; once the key is gone, idle workers "
        "look at it again within 5 s."
    )


@pytest.mark.parametrize(("name", "kind"), [("ready", "zset"), ("wake", "list")])
def test_the_command_pauses_and_says_the_resume_woke_no_worker_and_why(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    name: str,
    kind: str,
) -> None:
    key = getattr(backend.broker.queue_keys("emails"), name)
    redis_client.set(key, "another program's value")

    def queue_command(action: str) -> tuple[int, str, str]:
        ended = run_python(
            "manage.py",
            "threadmill_queue",
            action,
            "emails",
            redis_url=redis_url,
            key_prefix=key_prefix,
        )
        return ended.returncode, ended.stdout, ended.stderr

    code, out, _ = queue_command("pause")
    assert (code, out.startswith("Paused queue emails of backend default")) == (0, True)
    assert list(Inspector(backend.broker).paused(["emails"])) == ["emails"]

    code, out, err = queue_command("resume")
    assert (code, out) == (1, "")
    logged, said = err.splitlines()
    assert logged.startswith("Queue resumed backend=default queue=emails by=")
    assert said == f"CommandError: {fix_of('default', 'emails', key, kind)}"
    assert Inspector(backend.broker).paused(["emails"]) == {}

    redis_client.delete(key)  # the fix the error names: the queue's tasks go on
    task = new_task("emails")
    backend.broker.enqueue("emails", [task])
    assert [r.lease.task_id for r in backend.broker.acquire("emails", 1).reservations] == [task.id]


def test_a_sharded_queue_wakes_its_other_shards_and_logs_the_resume(
    broker: Broker, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    first, *others = broker.parts("default")
    assert len(others) == SHARDS - 1
    broker.pause("default", "test")
    redis_client.set(broker.queue_keys(first).wake, "x")
    caplog.clear()

    with (
        caplog.at_level(logging.INFO, logger="django_threadmill.broker.pausing"),
        pytest.raises(ResumedNotWoken) as refused,
    ):
        broker.resume("default", "ada")

    assert str(refused.value) == fix_of("default", "default", broker.queue_keys(first).wake, "list")
    assert caplog.messages == ["Queue resumed backend=default queue=default by=ada"]
    assert Inspector(broker).paused(["default"]) == {}
    assert [redis_client.llen(broker.queue_keys(part).wake) for part in others] == [1] * len(others)
