"""durability='fsync' on a Redis 7.2+ whose AOF was turned off at runtime (CONFIG SET).

WAITAOF then fails for every call ("WAITAOF cannot be used when numlocal is set but appendonly
is disabled"): each enqueue stored its task and raised MaybeApplied with Redis's words alone,
and nothing said how to make the next one work.
"""

from collections.abc import Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import MaybeApplied
from testproject.example.tasks import echo
from tests.servers.redis_server import RedisProcess
from tests.support import wait_until


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"durability": "fsync"}


@pytest.fixture
def redis_url(waitaof_server: RedisProcess) -> Iterator[str]:
    """The module's WAITAOF server with its AOF off for this test, and on again after it."""
    client = redis.Redis.from_url(waitaof_server.url)
    client.config_set("appendonly", "no")
    try:
        yield waitaof_server.url
    finally:
        client.config_set("appendonly", "yes")
        # Turned on, the AOF is rewritten in the background: let it end before the server stops.
        wait_until(lambda: _aof_rewritten(client), "the AOF rewrite")
        client.close()


def _aof_rewritten(client: redis.Redis) -> bool:
    persistence = client.info("persistence")
    return not persistence["aof_rewrite_in_progress"] and not persistence["aof_rewrite_scheduled"]


def test_enqueue_names_the_fix_when_appendonly_is_off(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(MaybeApplied) as raised:
        echo.enqueue("unconfirmed")
    assert (
        "the confirmation failed: WAITAOF cannot be used when numlocal is set but appendonly is "
        "disabled. Set appendonly yes on the server (CONFIG SET appendonly yes, and in "
        "redis.conf so that it stays on after a restart), or set OPTIONS['durability'] to "
        "'replicated' or 'local'. A failover now could lose it."
    ) in str(raised.value)
    [task_id] = raised.value.task_ids
    assert echo.get_result(task_id).args == ["unconfirmed"]  # stored, as the error says it may be
