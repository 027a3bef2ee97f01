"""manage.py threadmill_reap's output cut short, and its error when every queue failed.

Before, ``threadmill_reap --dry-run | head -1`` (or a closed or full stdout, ``--once`` too)
ended in a BrokenPipeError, AttributeError or OSError traceback, where ``threadmill_queue`` and
``threadmill_schedules`` end with exit code 1 and none. And a ``--once`` pass whose every queue
failed while Redis answered (a read-only replica at LOCATION) said "the other queues were
reaped" of a pass that reaped none.
"""

import subprocess

import pytest
import redis
from django.core.management import CommandError

from django_threadmill.broker import Broker
from testproject.example.tasks import echo
from tests.management.test_health_and_queue_commands_edges import HOW, cut_short
from tests.support import command_env, output_of

# call_command runs the command's logging setup in the test's own process.
pytestmark = pytest.mark.usefixtures("logging_put_back")


def expired_reservation(broker: Broker, redis_client: redis.Redis) -> str:
    """Reserve one task of the default queue and expire its lease; return its leases key."""
    echo.enqueue(1)
    assert len(broker.acquire("default", 1).reservations) == 1
    leases = broker.queue_keys("default").leases
    redis_client.zadd(leases, dict.fromkeys(redis_client.zrange(leases, 0, -1), 0), xx=True)
    return leases


def reap_command(
    redis_url: str, key_prefix: str, how: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """Run ``threadmill_reap args`` with a stdout no line can be written to, as ``how`` says."""
    env = command_env(redis_url, key_prefix)
    return cut_short(how, env, "threadmill_reap", "--skip-checks", *args)


@pytest.mark.parametrize("args", [["--dry-run"], ["--once"]])
@pytest.mark.parametrize("how", HOW)
def test_a_reap_whose_output_is_closed_exits_1_without_a_traceback(
    broker: Broker,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    how: str,
    args: list[str],
) -> None:
    leases = expired_reservation(broker, redis_client)
    cut = reap_command(redis_url, key_prefix, how, *args)
    assert cut.returncode == 1
    assert "Traceback" not in cut.stderr
    assert "Error" not in cut.stderr
    # The pass ran before its counts were written: a real one settled the lease all the same.
    assert redis_client.zcard(leases) == (1 if args == ["--dry-run"] else 0)


def test_every_queue_failing_says_none_was_reaped(
    broker: Broker, redis_client: redis.Redis
) -> None:
    for queue in ("default", "emails", "reports"):
        redis_client.set(broker.queue_keys(queue).leases, "not a zset")

    with pytest.raises(CommandError) as failed:
        output_of("threadmill_reap", "--once")

    assert str(failed.value).startswith(
        "Reap of every queue failed (default, emails and reports), none was reaped: Redis at "
    )
    assert "wrong kind" in str(failed.value)
