"""The primary of the alias-wide keys (``{alias}``: the queue set, the layouts) down with no
replica to take over, under ``cluster-require-full-coverage no``: ``threadmill_health`` and the
admin's queues page go through the queues in QUEUES, as the reaper does.

Both read the queue set first, and failed for the whole alias: the probe exited 3 naming the
down node though this host's worker renewed its leases in the queues the other primaries serve,
and the queues page showed that error alone, no queue. Now each reads the queues in QUEUES,
says so with the node's error, and names those on that node ("billing") as unread, not empty.
"""

import re
import socket
from pathlib import Path

import pytest
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from django_threadmill.management.health import HealthCode
from tests.admin.conftest import QUEUES_URL, operator, page
from tests.admin.test_counts_and_charts import queue_row
from tests.faults.tasks import count_run
from tests.servers.redis_cluster import LocalCluster
from tests.support import Command, running, wait_until, worker

from ..conftest import QUEUES, command_env
from .test_enqueues_and_a_worker_started_go_on_while_the_primary_of_the_alias_wide_keys_is_down import (  # noqa: E501
    alias_primary_down,
)

pytestmark = pytest.mark.slow

__all__ = ["operator"]  # the admin tests' staff client fixture
SERVED = ("images", "default")  # slots 4887 and 15466: on the two primaries that stay up
DOWN_QUEUE = "billing"  # slot 7094: beside the queue set
UP_QUEUES = ("default", "emails", "images", "reports")
CONFIGURED = ",".join(sorted(QUEUES))
HOST = socket.gethostname()


@pytest.fixture
def redis_url(cluster: LocalCluster) -> str:
    """LOCATION names a primary that stays up: the one of "images"."""
    return cluster.primary_for("{default:images}").url


def probe(redis_url: str, key_prefix: str, env: dict[str, str], *args: str) -> tuple[int, str]:
    """Run ``manage.py threadmill_health`` once; return its exit code and output."""
    command = Command(redis_url, key_prefix, "threadmill_health", *args, extra_env=env)
    try:
        return command.wait(), command.log
    finally:
        command.close()


@pytest.mark.timeout(240)
def test_the_probe_counts_the_workers_of_the_queues_still_served_and_names_the_others(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
) -> None:
    env = command_env(tasks_options)
    queues = [argument for queue in SERVED for argument in ("--queue", queue)]
    with alias_primary_down(cluster, backend) as down:
        started = worker(redis_url, key_prefix, *queues, extra_env=env)
        with running(started):
            wait_until(
                lambda: len(Inspector(backend.broker).workers(SERVED, counts=False)) == 2,
                "the worker's first renewal in each queue it serves",
            )
            code, said = probe(redis_url, key_prefix, env)
        too_few = probe(redis_url, key_prefix, env, "--host", "elsewhere")
        passed = probe(redis_url, key_prefix, env, "--host", "elsewhere", "--redis-down-ok")

    alone = (
        "heartbeats read in the queues in QUEUES alone, as the queue set could not be read (a "
        f"queue registered only in Redis is not read), and not in {DOWN_QUEUE}, on that "
        f"node: The Redis Cluster at {redis_url} cannot reach its node {down} ("
    )
    healthy = f"Healthy host={HOST} live=1 min_processes=1 queues={CONFIGURED} lease_ttl_s=60: "
    assert (code, said[: len(healthy + alone)]) == (HealthCode.HEALTHY, healthy + alone), said
    # Too few may be Redis's: a worker of billing alone cannot renew, which no restart fixes.
    fewer = (
        "host=elsewhere live=0: fewer worker processes of this host renewed their leases within "
        "lease_ttl than --min-processes in the queues read, "
    )
    assert too_few[0] == HealthCode.UNREACHABLE
    assert f"CommandError: Unhealthy {fewer}{alone}" in too_few[1]
    assert passed[0] == HealthCode.HEALTHY
    assert f"Redis unavailable, passing (--redis-down-ok) {fewer}{alone}" in passed[1]


@pytest.mark.timeout(180)
def test_the_queues_page_lists_the_queues_still_served_and_those_of_the_down_node_as_unavailable(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    operator: Client,
    redis_url: str,
    tmp_path: Path,
) -> None:
    count_run.using(queue_name="default").enqueue(str(tmp_path / "runs.log"))
    with alias_primary_down(cluster, backend) as down:
        html = page(operator, QUEUES_URL)

    said = (
        f"The queue set could not be read: The Redis Cluster at {redis_url} cannot reach its "
        f"node {down} ("
    )
    alone = (
        "nothing was written. The queues listed are those in QUEUES alone (a queue registered "
        f"only in Redis is not listed), and those on that node are unavailable: {DOWN_QUEUE}."
    )
    [note] = re.findall(r'<p class="errornote">(.*?)</p>', html, re.S)
    assert (note[: len(said)], note[-len(alone) :]) == (said, alone), note
    assert (
        f'<tr><td>{DOWN_QUEUE}</td><td colspan="12" class="tm-error">Unavailable: its Redis '
        "Cluster node does not answer (above).</td></tr>"
    ) in html
    # READY of each queue a primary still up serves: one task in "default".
    assert [queue_row(html, queue)[0] for queue in UP_QUEUES] == ["1", "0", "0", "0"]
