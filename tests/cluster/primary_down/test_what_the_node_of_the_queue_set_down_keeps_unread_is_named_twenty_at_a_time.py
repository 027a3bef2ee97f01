"""The primary of the queue set down on a Redis Cluster of 200 queues, about 70 of them on that
node too: each line naming what it kept unread names at most 20 queues or queue parts and
counts the others (``queues=t000,...,+50_more``; "Damaged records not read in t000, ... and 50
more").

Each line named every one: a reap pass's (the queues in QUEUES it went through, those it
skipped, the workflow outboxes it could not drain), the scrape's, the workflows thread's, and
``threadmill_queue damaged``'s; with thousands of queues, tens of KB per line, every pass and
every scrape for as long as the node was down (wording.listed_values, listed_names).
"""

import logging
from collections.abc import Iterator
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from django_threadmill.aliases import source_of
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.observability.prometheus import exposition
from django_threadmill.wording import MAX_LISTED_IDS
from django_threadmill.worker.reap_parts import pass_parts
from django_threadmill.worker.reaper import _drained
from django_threadmill.worker.workflow_drainer import WorkflowDrainer
from tests.conftest import serving
from tests.servers.redis_cluster import LocalCluster

from .conftest import replica_of

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("logging_put_back", "node_down")]

QUEUES = [f"t{n:03}" for n in range(200)]  # sorted; about a third on each primary
SET_TAG = "{default}"  # the hash tag of the alias-wide keys: the queue set among them


@pytest.fixture(scope="module")
def on_the_node(cluster: LocalCluster) -> list[str]:
    """The queues whose keys are on the primary of the queue set, in QUEUES' order."""
    victim = cluster.primary_for(SET_TAG)
    return [q for q in QUEUES if cluster.primary_for(f"{{default:{q}}}").port == victim.port]


@pytest.fixture(scope="module")
def node_down(cluster: LocalCluster, on_the_node: list[str]) -> Iterator[None]:
    """Take away the primary of the queue set and its replica (first: no failover can serve
    its slots) for the module's tests; start both again after them."""
    victim = cluster.primary_for(SET_TAG)
    its_replica = replica_of(cluster, victim)
    its_replica.kill()
    victim.kill()
    try:
        yield
    finally:
        victim.start()
        its_replica.start()
        cluster.wait_until_healthy()


@pytest.fixture
def redis_url(cluster: LocalCluster) -> str:
    """LOCATION names a primary that stays up: one the queue set is not on."""
    down = cluster.primary_for(SET_TAG).port
    return next(node.url for node in cluster.live() if node.port != down)


threadmill_settings = serving(QUEUES)


def field(line: str, name: str) -> list[str]:
    """Return the items of the ``name=a,b,c`` field of ``line``."""
    [value] = [word for word in line.split() if word.startswith(f"{name}=")]
    return value.removeprefix(f"{name}=").split(",")


def logged(caplog: pytest.LogCaptureFixture, start: str) -> str:
    """Return the one line logged that starts with ``start``."""
    [line] = [m for m in caplog.messages if m.startswith(start)]
    return line


def twenty_of(listed: list[str], among: list[str]) -> None:
    """Check that ``listed`` (a field's items) names 20 of ``among`` and counts the rest."""
    *named, more = listed
    assert more == f"+{len(among) - MAX_LISTED_IDS}_more", listed
    assert len(set(named)) == MAX_LISTED_IDS, listed
    assert set(named) <= set(among), listed


@pytest.mark.timeout(180)
def test_a_reap_pass_names_twenty_of_the_queues_it_went_through_and_of_those_it_skipped(
    on_the_node: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="django_threadmill"),
        pytest.raises(CommandError),
    ):
        call_command("threadmill_reap", "--once", stdout=StringIO())

    unknown = "Reap goes through the queues in QUEUES alone, those registered only in Redis "
    assert field(logged(caplog, unknown), "queues") == [*QUEUES[:MAX_LISTED_IDS], "+180_more"]
    skipped = "Reap skipped the queues of a node that did not answer, the others go on "
    twenty_of(field(logged(caplog, skipped), "queues"), on_the_node)


@pytest.mark.timeout(180)
def test_a_reap_pass_names_twenty_of_the_outboxes_a_node_gone_since_it_began_keeps_unread(
    backend: ThreadmillTaskBackend, on_the_node: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The pass read its node as answering (no part down), then drains its outboxes."""
    parts = pass_parts(backend.broker, QUEUES, other={queue: [] for queue in QUEUES}, down={})

    with caplog.at_level(logging.WARNING, logger="django_threadmill"):
        _drained(backend, parts)

    left = "Reap left the workflow outboxes of a node that did not answer, the others are "
    twenty_of(field(logged(caplog, left), "parts"), on_the_node)


@pytest.mark.timeout(180)
def test_the_scrape_names_twenty_of_the_queues_it_leaves_out(
    backend: ThreadmillTaskBackend, on_the_node: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="django_threadmill"):
        exposition([source_of(backend)])

    left_out = "Metrics read in the queues in QUEUES alone, as the queue set could not be read"
    twenty_of(field(logged(caplog, left_out), "queues"), on_the_node)


@pytest.mark.timeout(180)
def test_the_workflows_thread_names_twenty_of_the_outboxes_it_cannot_read(
    backend: ThreadmillTaskBackend, on_the_node: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    drainer = WorkflowDrainer(
        backend.broker, tuple(QUEUES), lambda part: 0, lambda: None, lambda: None
    )

    with caplog.at_level(logging.WARNING, logger="django_threadmill"):
        drainer._all_filled()  # its look at every outbox, as at its start

    unread = "Workflow outboxes unreadable on a node, the others are drained"
    layouts = backend.broker.keyspace.layouts  # the shard counts in use, beside the queue set
    twenty_of(field(logged(caplog, unread), "unread"), [layouts, *on_the_node])


@pytest.mark.timeout(180)
def test_the_damaged_listing_names_twenty_of_the_queues_it_read_and_of_those_it_did_not(
    on_the_node: list[str],
) -> None:
    out = StringIO()

    with pytest.raises(CommandError) as incomplete:
        call_command("threadmill_queue", "damaged", stdout=out)

    read = [queue for queue in QUEUES if queue not in on_the_node]
    more = len(read) - MAX_LISTED_IDS
    assert out.getvalue() == f"No damaged records in {', '.join(read[:20])} and {more} more.\n"
    unread = f"{', '.join(on_the_node[:20])} and {len(on_the_node) - MAX_LISTED_IDS} more"
    assert f"Damaged records not read in {unread}, on a Redis Cluster node that " in str(
        incomplete.value
    )
