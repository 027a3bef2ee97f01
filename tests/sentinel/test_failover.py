"""SIGKILL of the Sentinel-managed primary mid-run, durability="replicated": 0 tasks lost.

The sentinels promote the replica; the old primary, started again, is made its replica, so
WAIT finds a replica again. THREADMILL_SLOW=1 runs 3000 tasks instead of 150.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers.failover import SLOW, assert_failover_loses_nothing
from tests.servers.redis_sentinel import LocalSentinel, local_sentinel

from .conftest import LOCATION, command_env

QUEUES = ("default", "emails", "reports")


@pytest.fixture(scope="module")
def sentinel_setup() -> Iterator[LocalSentinel]:
    """A setup of this module's own: the test kills its primary."""
    with local_sentinel() as setup:
        yield setup


@pytest.mark.timeout(600 if SLOW else 180)
def test_primary_killed_mid_run_loses_no_acknowledged_task(
    sentinel_setup: LocalSentinel,
    tasks_options: dict[str, object],
    key_prefix: str,
    tmp_path: Path,
) -> None:
    def fail_over() -> None:
        sentinel_setup.restart(sentinel_setup.kill_primary())

    env = command_env(tasks_options)
    assert_failover_loses_nothing(
        LOCATION, key_prefix, env, QUEUES, fail_over, tmp_path / "runs.log"
    )
