"""``threadmill_queue resume`` on a Redis at ``maxmemory``: the pause is lifted, the wake-up is not.

A resume deletes the pause key (``DEL``, which Redis serves when full, as it frees memory), then
pushes wake tokens (``RPUSH``, which a full Redis refuses). Before, the command said only "Redis
… is out of memory (…); nothing was written." and logged no ``Queue resumed`` line, though the
queue was resumed: the operator, told the queue was as it was, ran it again and read "was not
paused; nothing changed", and the audit log never said who lifted the pause. Now the line is
logged once the pause is gone, and the error says the queue is resumed and its idle workers were
not woken (docs/lifecycle.md, Keys of another type: the same for a key of another type).
"""

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from django_threadmill.exceptions import ResumedNotWoken
from tests.servers.redis_server import RedisProcess
from tests.support import run_python


@pytest.fixture
def redis_url(own_redis: RedisProcess) -> str:
    return own_redis.url


@contextmanager
def full(server: RedisProcess) -> Iterator[None]:
    """Have ``server`` refuse every write that would take memory (its ``maxmemory`` below what
    it uses) for the block; ``DEL`` and reads go on."""
    with redis.Redis.from_url(server.url) as admin:
        admin.config_set("maxmemory", 1)
        try:
            yield
        finally:
            admin.config_set("maxmemory", 0)


def resume_on_a_full_redis(server: RedisProcess, key_prefix: str) -> tuple[int, str, str]:
    """Run ``threadmill_queue resume emails`` while ``server`` is full; return its code,
    stdout and stderr."""
    with full(server):
        ended = run_python(
            "manage.py",
            "threadmill_queue",
            "resume",
            "emails",
            redis_url=server.url,
            key_prefix=key_prefix,
        )
    return ended.returncode, ended.stdout, ended.stderr


def test_the_resume_is_logged_and_said_though_redis_refused_the_wake_up(
    backend: ThreadmillTaskBackend, own_redis: RedisProcess, key_prefix: str
) -> None:
    backend.broker.pause("emails", "ops@host", "deploy")

    code, out, err = resume_on_a_full_redis(own_redis, key_prefix)

    assert (code, out) == (1, "")
    *logged, said = err.splitlines()
    assert [line.partition(" by=")[0] for line in logged] == [
        "Queue resumed backend=default queue=emails"
    ]
    assert said.startswith(
        "CommandError: Resumed queue emails of backend default, but the call waking its idle "
        f"workers failed: Redis at {own_redis.url} is out of memory ("
    )
    assert said.endswith(
        "The queue stays resumed; idle workers look at it again within 5 s, once Redis answers."
    )
    assert Inspector(backend.broker).paused(["emails"]) == {}


def test_the_admin_is_told_the_queue_was_resumed_as_for_a_key_of_another_type(
    backend: ThreadmillTaskBackend, own_redis: RedisProcess, caplog: pytest.LogCaptureFixture
) -> None:
    """``ResumedNotWoken`` is what the admin's Resume shows as "Resumed …, but" (before, the
    out-of-memory error: "nothing was written")."""
    backend.broker.pause("emails", "ops@host")
    caplog.clear()

    with (
        caplog.at_level(logging.INFO, logger="django_threadmill.broker.pausing"),
        full(own_redis),
        pytest.raises(ResumedNotWoken, match=r"^Resumed queue emails of backend default, but "),
    ):
        backend.broker.resume("emails", "ada in the admin")

    assert caplog.messages == ["Queue resumed backend=default queue=emails by=ada in the admin"]
    assert Inspector(backend.broker).paused(["emails"]) == {}
