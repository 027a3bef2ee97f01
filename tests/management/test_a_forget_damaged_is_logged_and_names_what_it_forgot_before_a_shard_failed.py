"""``threadmill_queue forget-damaged`` leaves an audit line, and a forget that a shard of a
sharded queue fails midway says which entries the shards before it dropped.

Before, the command logged nothing, where pause, resume and purge log who did what: the entry
is the only pointer to a key set aside, which no index names, and nobody could tell afterwards
who dropped it. And the ids were dropped from every shard in one pipeline: a shard whose set
holds another type (or, on a Redis Cluster, whose node is lost) failed the command with that
error alone, while the other shards had dropped their entries, unsaid (a rerun then called them
"not in its damaged list").
"""

import subprocess
import textwrap

import pytest
import redis

from django_threadmill.broker import Broker
from tests.servers.redis_server import RedisProcess
from tests.support import run_python

SHARDS = 4
SOCKET_TIMEOUT_S = 0.5  # a shard whose writes are held fails its call after this
OPTIONS: dict[str, object] = {
    "queue_shards": {"default": SHARDS},
    "socket_timeout": SOCKET_TIMEOUT_S,
}
ENTRY = "1700000000000 acquire: its key holds no hash"
BY = "with manage.py threadmill_queue"
LISTING = "'manage.py threadmill_queue damaged default'"

# threadmill_queue with argv[2:], whose Redis (argv[1]) holds every write once the first
# forget pipeline has answered, as a node of a Redis Cluster lost after the first shard's call.
WRITES_HELD_AFTER_THE_FIRST_SHARD = textwrap.dedent(
    """
    import sys

    import django

    django.setup()

    import redis
    from django.core.management import execute_from_command_line

    execute = redis.client.Pipeline.execute

    def writes_held_after_a_forget(self, *args, **kwargs):
        commands = [args[0] for args, _ in self.command_stack]
        forget = bool(commands) and set(commands) == {"HDEL"}
        reply = execute(self, *args, **kwargs)
        if forget:
            with redis.Redis.from_url(sys.argv[1]) as admin:
                admin.client_pause(600_000, all=False)
        return reply

    redis.client.Pipeline.execute = writes_held_after_a_forget
    execute_from_command_line(["manage.py", "threadmill_queue", *sys.argv[2:]])
    """
)


@pytest.fixture
def redis_url(own_redis: RedisProcess) -> str:
    return own_redis.url  # the last test holds its writes


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return OPTIONS


@pytest.fixture
def shard_sets(broker: Broker, redis_client: redis.Redis) -> list[str]:
    """Plant one entry in each of the first three shards' damaged sets, in the order a forget
    walks them: ``a``, ``b``, ``c``; return the sets' keys, in that order."""
    parts = broker.every_part("default")
    keys = [broker.queue_keys(part).damaged for part in parts]
    for key, task_id in zip(keys, "abc", strict=False):
        redis_client.hset(key, task_id, ENTRY)
    return keys


def forget(redis_url: str, key_prefix: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_python(
        "manage.py",
        "threadmill_queue",
        "forget-damaged",
        "default",
        *args,
        "--skip-checks",
        redis_url=redis_url,
        key_prefix=key_prefix,
        options=OPTIONS,
    )


def left(redis_client: redis.Redis, keys: list[str]) -> list[str]:
    return sorted(task_id for key in keys for task_id in redis_client.hkeys(key))


def test_forget_with_ids_and_with_all_logs_who_forgot_which_and_how_many(
    shard_sets: list[str], redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    named = forget(redis_url, key_prefix, "b", "typo")
    assert named.returncode == 1
    assert (
        "Damaged records forgotten backend=default queue=default ids=b,typo forgot=1 by="
        in named.stderr
    )
    assert f"{BY}\n" in named.stderr  # complete: the line ends with who
    assert left(redis_client, shard_sets) == ["a", "c"]

    every = forget(redis_url, key_prefix, "--all")
    assert every.returncode == 0, every.stderr
    assert every.stdout.endswith(
        "Forgot 2 damaged record(s) of queue default: those listed "
        "above, read and dropped in one step.\n"
    )
    assert "Damaged records forgotten backend=default queue=default ids=all forgot=2 by=" in (
        every.stderr
    )
    assert left(redis_client, shard_sets) == []


def test_a_shard_whose_set_holds_another_type_stops_the_forget_naming_what_was_dropped(
    shard_sets: list[str], redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    third = shard_sets[2]
    redis_client.delete(third)
    redis_client.set(third, "written by another program")

    stopped = forget(redis_url, key_prefix, "a", "b", "c")

    assert stopped.returncode == 1
    assert stopped.stderr.splitlines()[-1] == (
        "CommandError: Forgot 2 damaged record(s) of queue default (a and b), then stopped: the "
        f"next shard failed: Redis at {redis_url} holds a value of the wrong kind in one of "
        f"this backend's keys (Command # 1 (HDEL {third} a) of pipeline caused error: "
        "WRONGTYPE Operation against a key holding the wrong kind of value). Something other "
        "than django-threadmill wrote to it: delete that key, or give each project its own "
        f"OPTIONS['key_prefix']. The others are kept: {LISTING} lists them."
    )
    assert "ids=a,b,c forgot=2 by=" in stopped.stderr
    assert f"{BY} incomplete=yes\n" in stopped.stderr

    redis_client.delete(third)
    redis_client.hset(shard_sets[3], "c", ENTRY)
    rerun = forget(redis_url, key_prefix, "c")
    assert (rerun.returncode, rerun.stdout) == (0, "Forgot 1 damaged record(s) of queue default.\n")
    assert left(redis_client, shard_sets) == []


def test_a_shard_that_does_not_answer_names_what_the_shards_before_it_dropped(
    shard_sets: list[str], redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    try:
        stopped = run_python(
            "-c",
            WRITES_HELD_AFTER_THE_FIRST_SHARD,
            redis_url,
            "forget-damaged",
            "default",
            "a",
            "b",
            "c",
            "--skip-checks",
            redis_url=redis_url,
            key_prefix=key_prefix,
            options=OPTIONS,
        )
    finally:
        redis_client.client_unpause()

    assert stopped.returncode == 1, stopped.stderr
    last = stopped.stderr.splitlines()[-1]
    assert last.startswith(
        "CommandError: Forgot 1 damaged record(s) of queue default (a), then stopped: the next "
        f"shard failed, and may have dropped its entries too: Redis at {redis_url} did not "
        f"answer within socket_timeout={SOCKET_TIMEOUT_S:g}s"
    ), last
    assert last.endswith(
        "the call may have been applied, or may still be once Redis goes on. "
        f"{LISTING} lists those left."
    ), last
    assert "ids=a,b,c forgot=1 by=" in stopped.stderr
    assert f"{BY} incomplete=yes\n" in stopped.stderr
    assert "c" in left(redis_client, shard_sets)  # the shards after the silent one: untouched
