"""Redis away mid-run: workers ride it out, nothing is lost, enqueue raises a clear error.

By default Redis stays away until the worker has backed off to 3.2 s (about 5 s in all);
THREADMILL_SLOW=1 keeps it away until the backoff has reached its 10 s ceiling three times (~33 s).
"""

import os
import re
import signal
import time
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import BrokerUnavailable
from tests.servers.redis_server import RedisProcess
from tests.support import wait_until, worker

from . import tasks
from .support import all_successful, enqueue_counted, executions

SLOW = bool(os.environ.get("THREADMILL_SLOW"))
# Log lines that mark how long Redis stays away: the worker's own backoff, not a clock. Both
# processes log each step, so six lines at the 10 s ceiling are three rounds of it.
AWAY_UNTIL = (r"Fetch failed, retrying in 10\.0s", 6) if SLOW else (r"retrying in 3\.2s", 1)
LEASE_TTL_S = 60.0 if SLOW else 15.0  # above the outage: live leases must survive it


@pytest.fixture
def redis_url(durable_redis: RedisProcess) -> str:
    """Run this module on a server of its own, which the test kills and restarts."""
    return durable_redis.url


@pytest.mark.timeout(180 if SLOW else 90)
def test_nothing_lost_while_redis_is_away(
    backend: ThreadmillTaskBackend, durable_redis: RedisProcess, key_prefix: str, tmp_path: Path
) -> None:
    log = tmp_path / "runs.log"
    results = enqueue_counted(backend, log, 3000)
    command = worker(
        durable_redis.url, key_prefix, "--processes", "2", "--threads", "2",
        "--reap-interval", "1", lease_ttl_s=LEASE_TTL_S,
    )  # fmt: skip
    try:
        wait_until(lambda: len(executions(log)) > 300, "some tasks running")
        durable_redis.kill()
        went_away = time.monotonic()
        with pytest.raises(BrokerUnavailable, match=r"is unreachable .* Start Redis or fix TASKS"):
            tasks.count_run.enqueue(str(log))
        pattern, times = AWAY_UNTIL
        wait_until(lambda: len(re.findall(pattern, command.log)) >= times, pattern, 60)
        durable_redis.start()
        print(f"\nRedis was away {time.monotonic() - went_away:.1f}s")  # reported, not asserted
        late = tasks.count_run.enqueue(str(log))
        wait_until(lambda: all_successful([*results, late]), "every task SUCCESSFUL", 60)
        command.signal(signal.SIGTERM)
        assert command.wait(60) == 0, command.log
        assert "Worker process died" not in command.log
    finally:
        command.close()
    assert executions(log) == {result.id: 1 for result in [*results, late]}
