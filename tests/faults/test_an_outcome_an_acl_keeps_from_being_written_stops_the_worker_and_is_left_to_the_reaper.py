"""An ACL user that may run every command a worker sends but one only finish.lua runs (the
expiry of a finished record): the worker stops with exit code 4 naming the rule, as when its
prefetcher or lease keeper meets a refusal, and leaves the outcome to the reaper.

Before the fix the ack writer took the refusal for a Redis away: it logged "Ack batch failed"
and tried the same call again until someone stopped the worker, while the process looked
healthy, renewing the task's lease, and the record stayed without its expiry.
"""

import pytest
import redis
from django.test import override_settings

from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.servers.redis_server import RedisProcess
from tests.support import Command, wait_until, worker

from .test_a_command_an_acl_keeps_from_a_script_is_refused_naming_the_rule import (  # noqa: F401
    GRANT,
    acl_user_url,
    server,
)

# The grant the refusal names, less the expiry finish.lua gives a finished record (PEXPIRE for
# a lone one, PEXPIREAT for a call of several): the worker reserves, starts and renews.
ALL_BUT_EXPIRY = ("+@all", "-@dangerous", "+info", "-pexpire", "-pexpireat")
LEASE_TTL_S = 2.0  # the outcome's lease lapses this soon after the stop, for the reaper


@pytest.fixture
def redis_url(server: RedisProcess, key_prefix: str) -> str:  # noqa: F811
    return acl_user_url(server, key_prefix, *ALL_BUT_EXPIRY)


def test_the_worker_stops_naming_the_rule_and_the_reaper_settles_the_task(
    server: RedisProcess,  # noqa: F811
    redis_url: str,
    key_prefix: str,
) -> None:
    with override_settings(TASKS=tasks_setting(server.url, key_prefix)):
        result = echo.enqueue(1)
    command = worker(redis_url, key_prefix, lease_ttl_s=LEASE_TTL_S)
    try:
        assert command.wait(60) == 4, command.log  # REFUSED: no restart can help
        assert command.log.count("Redis refused this worker, stopping") == 1, command.log
        assert GRANT in command.log
        assert "Ack batch left to the reaper kind=finish size=1" in command.log
        assert "Ack batch failed" not in command.log
        assert "Traceback" not in command.log
    finally:
        command.close()

    with override_settings(TASKS=tasks_setting(server.url, key_prefix)):
        reaper = Command(
            server.url, key_prefix, "threadmill_reap", "--interval", "1", lease_ttl_s=LEASE_TTL_S
        )
        admin = redis.Redis.from_url(server.url)
        try:
            leases = echo.get_backend().broker.queue_keys("default").leases
            wait_until(lambda: admin.zcard(leases) == 0, "the reaper to drop the task's lease")
            # Redis keeps what a script wrote before the command it refused: the outcome, so the
            # reaper found it settled and dropped its lease (docs/lifecycle.md).
            result.refresh()
            assert result.status == TaskResultStatus.SUCCESSFUL
        finally:
            admin.close()
            reaper.close()
