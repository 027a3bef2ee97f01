"""get_result and aget_result of ids that name no task of this backend, and of a Redis that
cannot serve the read: ``TaskResultDoesNotExist``, or an error naming the problem and the fix."""

import asyncio
import re
from collections.abc import Iterator

import pytest
import redis
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultDoesNotExist, task_backends
from django_threadmill.exceptions import BrokerUnavailable, MaybeApplied
from testproject.example.tasks import echo
from tests.backend.conftest import Read
from tests.conftest import tasks_setting
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import wait_until


@pytest.fixture(params=["get_result", "aget_result"])
def read(request: pytest.FixtureRequest, backend: ThreadmillTaskBackend) -> Read:
    """Read a result through the sync API or the native async one."""
    if request.param == "get_result":
        return backend.get_result
    return lambda result_id: asyncio.run(backend.aget_result(result_id))


@pytest.mark.parametrize(
    "result_id",
    [
        "",
        "x" * 1024 * 1024,
        ":",
        "*",
        "x@*",
        "\x00",
        "x@default\x00",
        "@",
        "x@",
        "@default",
        "3f2b8c1e-7d4a-4e9b-a6c5-0d1e2f3a4b5c",  # Django's Dummy and Immediate backends: no queue
        "0" * 32 + "@default#0of4.0",  # the name of a shard's keys, not a queue
        "0" * 32 + "@{default}",
    ],
    ids=lambda result_id: repr(result_id)[:24],
)
def test_an_id_of_no_task_does_not_exist(read: Read, result_id: str) -> None:
    echo.enqueue(1)
    with pytest.raises(TaskResultDoesNotExist):
        read(result_id)


@pytest.mark.parametrize(
    "crafted",
    [
        "{id}}}",
        "{id}:t:x@emails",
        "{{default:emails}}:t:{id}",
        "{id}@default",
        "{id}@default:emails",
        "{id}@emails}}",
        "{id}@{{emails}}",
        "{id}@emails\x00",
    ],
)
def test_an_id_built_around_another_tasks_id_reads_no_other_key(read: Read, crafted: str) -> None:
    """The key of an id ends with the id, and the id with its queue: no hash tag or separator
    in an id reaches another task's record, another queue's or another alias's."""
    stored = echo.using(queue_name="emails").enqueue(1).id
    with pytest.raises(TaskResultDoesNotExist):
        read(crafted.format(id=stored))
    assert read(stored).args == [1]


def test_an_id_of_another_key_prefix_or_alias_does_not_exist(
    redis_url: str, backend: ThreadmillTaskBackend
) -> None:
    stored = echo.enqueue(1).id
    other_prefix = tasks_setting(redis_url, f"{backend.settings.key_prefix}-other")
    other_alias = {"other": tasks_setting(redis_url, backend.settings.key_prefix)["default"]}
    for setting, alias in ((other_prefix, "default"), (other_alias, "other")):
        with override_settings(TASKS=setting), pytest.raises(TaskResultDoesNotExist):
            task_backends[alias].get_result(stored)


@pytest.fixture
def cut_off_replica() -> Iterator[RedisProcess]:
    """A replica set to serve no stale data whose primary is gone: it answers MASTERDOWN."""
    with (
        redis_process() as primary,
        redis_process("--replicaof", "127.0.0.1", str(primary.port)) as replica,
        redis.Redis.from_url(replica.url, decode_responses=True) as client,
    ):
        wait_until(lambda: client.info("replication")["master_link_status"] == "up", "a link")
        # Set now: a replica started with it answers no PING until it has synced.
        client.config_set("replica-serve-stale-data", "no")
        primary.kill()
        wait_until(lambda: client.info("replication")["master_link_status"] == "down", "no link")
        yield replica


def test_a_read_from_a_replica_cut_off_from_its_primary_names_it_and_the_fix(
    cut_off_replica: RedisProcess, key_prefix: str
) -> None:
    """MASTERDOWN, a ClusterDownError to redis-py, read as a Redis Cluster mid-failover whose
    call may have been applied (MaybeApplied), of a plain replica refusing a read."""
    message = (
        f"Redis at {cut_off_replica.url} is a replica cut off from its primary, and set to "
        "serve no data meanwhile (Link with MASTER is down and replica-serve-stale-data is set "
        "to 'no'.). It answers again once it reaches its primary (INFO replication: "
        "master_link_status:up); if it does not, point LOCATION at the primary, or use "
        "OPTIONS['sentinel'] to follow it; nothing was written."
    )
    with override_settings(TASKS=tasks_setting(cut_off_replica.url, key_prefix)):
        backend = task_backends["default"]
        reads = [backend.get_result, lambda task_id: asyncio.run(backend.aget_result(task_id))]
        for read in reads:
            with pytest.raises(BrokerUnavailable, match=f"^{re.escape(message)}$") as raised:
                read("0" * 32 + "@default")
            assert not isinstance(raised.value, MaybeApplied)
