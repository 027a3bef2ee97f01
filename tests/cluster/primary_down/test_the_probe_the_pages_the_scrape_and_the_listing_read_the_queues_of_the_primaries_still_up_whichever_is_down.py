"""A Redis Cluster primary down with no replica to take over, under
``cluster-require-full-coverage no``: ``threadmill_health``, the admin's queues page and task
list, the Prometheus scrape and ``threadmill_queue list`` read what the primaries still up hold,
whichever primary is down, and name the queues they could not read with that node's error.

Each read of many queues goes in one pipeline, which spans every node. Before the fix a primary
down other than the one of the queue set ("images"'s) failed the probe and the queues page for
the whole alias; so did a probe naming its queues (``--queue``) with a queue on the node of the
queue set; and the scrape, the task list and the listing read the queue set strictly, so failed
whole while its node was down.
"""

import re
import socket
from pathlib import Path

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from django_threadmill.management.health import HealthCode
from tests.admin.conftest import QUEUES_URL, TASKS_URL, operator, page
from tests.admin.test_counts_and_charts import queue_row
from tests.faults.tasks import count_run
from tests.servers.redis_cluster import LocalCluster
from tests.support import Command, running, wait_until, worker

from ..conftest import QUEUES, command_env
from .conftest import DOWN
from .test_a_dead_worker_s_task_on_a_queue_still_served_is_reaped_while_another_primary_is_down import (  # noqa: E501
    primary_down,
)
from .test_enqueues_and_a_worker_started_go_on_while_the_primary_of_the_alias_wide_keys_is_down import (  # noqa: E501
    alias_primary_down,
)
from .test_the_health_probe_and_the_queues_page_go_through_the_queues_in_queues_while_the_primary_of_the_alias_wide_keys_is_down import (  # noqa: E501
    probe,
)

pytestmark = pytest.mark.slow

__all__ = ["operator"]  # the admin tests' staff client fixture
SERVED = "default"  # slot 15466: on the primary that stays up whichever other goes down
BESIDE_THE_SET = "billing"  # slot 7094: on the primary of the queue set
METRICS_URL = "/threadmill/metrics"
HOST = socket.gethostname()
CONFIGURED = ",".join(sorted(QUEUES))


@pytest.fixture
def redis_url(cluster: LocalCluster) -> str:
    """LOCATION names the primary of SERVED, which stays up."""
    return cluster.primary_for("{default:default}").url


@pytest.fixture(autouse=True)
def serving_without_full_coverage(cluster: LocalCluster) -> None:
    """Set ``cluster-require-full-coverage no`` again on every node: a node started again
    after an earlier test took it down came back without it, and the tests here take down two
    different primaries."""
    for node in cluster.live():
        with redis.Redis(port=node.port) as client:
            client.config_set("cluster-require-full-coverage", "no")


def cannot_reach(redis_url: str, node: str) -> str:
    """Return how the error of a node that does not answer begins."""
    return f"The Redis Cluster at {redis_url} cannot reach its node {node} ("


def serving(redis_url: str, key_prefix: str, env: dict[str, str]) -> Command:
    """Start a worker of SERVED alone."""
    return worker(redis_url, key_prefix, "--queue", SERVED, extra_env=env)


def renewed(backend: ThreadmillTaskBackend) -> bool:
    return len(Inspector(backend.broker).workers([SERVED], counts=False)) == 1


@pytest.mark.timeout(240)
def test_the_probe_counts_the_workers_of_the_queues_still_served_while_another_primary_is_down(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
) -> None:
    env = command_env(tasks_options)
    with running(serving(redis_url, key_prefix, env)):
        wait_until(lambda: renewed(backend), "the worker's first renewal")
        with primary_down(cluster, backend) as port:
            code, said = probe(redis_url, key_prefix, env)
            too_few = probe(redis_url, key_prefix, env, "--host", "elsewhere")
            passed = probe(redis_url, key_prefix, env, "--host", "elsewhere", "--redis-down-ok")

    unread = (
        f"heartbeats not read in {DOWN}, on a Redis Cluster node that does not answer: "
        f"{cannot_reach(redis_url, f'127.0.0.1:{port}')}"
    )
    healthy = f"Healthy host={HOST} live=1 min_processes=1 queues={CONFIGURED} lease_ttl_s=60: "
    assert (code, said[: len(healthy + unread)]) == (HealthCode.HEALTHY, healthy + unread), said
    fewer = (
        "host=elsewhere live=0: fewer worker processes of this host renewed their leases within "
        "lease_ttl than --min-processes in the queues read, "
    )
    assert too_few[0] == HealthCode.UNREACHABLE, too_few[1]
    assert f"CommandError: Unhealthy {fewer}{unread}" in too_few[1]
    assert passed[0] == HealthCode.HEALTHY, passed[1]
    assert f"Redis unavailable, passing (--redis-down-ok) {fewer}{unread}" in passed[1]


@pytest.mark.timeout(240)
def test_a_probe_of_named_queues_reads_those_still_served_while_the_queue_set_s_node_is_down(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
) -> None:
    env = command_env(tasks_options)
    named = ("--queue", BESIDE_THE_SET, "--queue", SERVED)
    with running(serving(redis_url, key_prefix, env)):
        wait_until(lambda: renewed(backend), "the worker's first renewal")
        with alias_primary_down(cluster, backend) as down:
            code, said = probe(redis_url, key_prefix, env, *named)

    healthy = (
        f"Healthy host={HOST} live=1 min_processes=1 queues={BESIDE_THE_SET},{SERVED} "
        f"lease_ttl_s=60: heartbeats not read in {BESIDE_THE_SET}, on a Redis Cluster node "
        f"that does not answer: {cannot_reach(redis_url, down)}"
    )
    assert (code, said[: len(healthy)]) == (HealthCode.HEALTHY, healthy), said


@pytest.mark.timeout(180)
def test_the_queues_page_lists_the_queues_still_served_and_those_of_another_down_primary(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    operator: Client,
    redis_url: str,
    tmp_path: Path,
) -> None:
    count_run.using(queue_name=SERVED).enqueue(str(tmp_path / "runs.log"))
    with primary_down(cluster, backend) as port:
        html = page(operator, QUEUES_URL)

    said = (
        f"The queues on a Redis Cluster node that does not answer are unavailable: {DOWN}. "
        f"{cannot_reach(redis_url, f'127.0.0.1:{port}')}"
    )
    [note] = re.findall(r'<p class="errornote">(.*?)</p>', html, re.S)
    assert note.startswith(said), note
    assert (
        f'<tr><td>{DOWN}</td><td colspan="12" class="tm-error">Unavailable: its Redis '
        "Cluster node does not answer (above).</td></tr>"
    ) in html
    assert [queue_row(html, queue)[0] for queue in ("billing", SERVED)] == ["0", "1"]


@pytest.mark.timeout(180)
def test_the_scrape_the_task_list_and_the_listing_read_the_queues_still_served(
    cluster: LocalCluster,
    backend: ThreadmillTaskBackend,
    operator: Client,
    redis_url: str,
    key_prefix: str,
    tasks_options: dict[str, object],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    task = count_run.using(queue_name=SERVED).enqueue(str(tmp_path / "runs.log"))
    with alias_primary_down(cluster, backend) as down:
        scraped = page(operator, METRICS_URL)
        listed = page(operator, TASKS_URL)
        listing = Command(
            redis_url,
            key_prefix,
            "threadmill_queue",
            "damaged",
            extra_env=command_env(tasks_options),
        )
        try:
            code, log = listing.wait(), listing.log
        finally:
            listing.close()

    ready = 'threadmill_queue_tasks{backend="default",queue="default",state="ready"} 1.0'
    assert ready in scraped, scraped
    assert 'queue="billing"' not in scraped, scraped
    assert 'threadmill_backend_up{backend="default"} 1.0' in scraped, scraped
    warned = (
        "Metrics read in the queues in QUEUES alone, as the queue set could not be read, those "
        f"of its node left out backend='default' queues={BESIDE_THE_SET} "
        f"error={cannot_reach(redis_url, down)}"
    )
    assert any(r.getMessage().startswith(warned) for r in caplog.records), caplog.text
    assert task.id in listed, listed
    assert f"The queue set could not be read: {cannot_reach(redis_url, down)}" in listed
    assert f"those on that node are unavailable: {BESIDE_THE_SET}.</p>" in listed
    assert code == 1, log  # incomplete, as a reap pass that left a queue out
    assert "No damaged records in default, emails, images and reports." in log, log
    unread = (
        f"Damaged records not read in {BESIDE_THE_SET}, on a Redis Cluster node that does not "
        f"answer: {cannot_reach(redis_url, down)}"
    )
    assert unread in log, log
