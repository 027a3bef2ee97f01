"""A queue's heartbeat key of another type leaves that queue out of the count, named.

A program sharing the key prefix can overwrite a queue's ``workers`` or ``stopped`` key (docs/
lifecycle.md, Keys of another type). Every queue's sightings are read in one pipeline, and the
one refused reply failed it all: threadmill_health exited 3 while this host's worker renewed in
the other queues, and with ``--redis-down-ok`` exited 0 ("Redis unavailable, passing") once the
worker was dead, so a liveness probe could never restart a wedged pod; the queues page showed
the backend's block as an error and the scrape left the backend out. Now that queue is left
out, named and logged: enough processes elsewhere pass, too few exit 3 naming the key, which
``--redis-down-ok`` does not pass (a process serving only that queue may still work).
"""

import logging
from collections.abc import Callable

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from django_threadmill.management.health import HealthCode
from testproject.example.tasks import add
from tests.admin.conftest import QUEUES_URL, logged_in, staff_user
from tests.backend_support import start
from tests.management.test_health import (
    HOST,
    LEASE_TTL_S,
    Probe,
    kill_group,
    one_line,
    probe_at,
    until_exit,
)
from tests.observability.test_metrics_view import TOKEN, scrape, value
from tests.support import Command

QUEUES = "default,emails,reports"  # testproject's QUEUES, all read by a probe without --queue
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
LEFT_OUT = (
    "each left_out key holds another type, so the heartbeats of its queue are not counted: "
    "delete it, or give each project its own OPTIONS['key_prefix']"
)


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"metrics_token": TOKEN}


@pytest.fixture
def probe(redis_url: str, key_prefix: str) -> Probe:
    return lambda *args: probe_at(redis_url, key_prefix, *args)


def skipped_line(key: str) -> str:
    return (
        "Worker sightings skipped, their key holds another type (delete it, or give each "
        "project its own OPTIONS['key_prefix']); the other queues' are read "
        f"key={key} error={WRONGTYPE}"
    )


@pytest.fixture(params=["workers", "stopped"])
def junk_key(
    request: pytest.FixtureRequest, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> str:
    """Queue reports' ``workers`` or ``stopped`` key, overwritten with a string."""
    key: str = getattr(backend.broker.queue_keys("reports"), request.param)
    redis_client.set(key, "junk")
    return key


@pytest.fixture
def worker(start_worker: Callable[..., Command]) -> Command:
    """A worker serving default and emails, not reports, started and renewing."""
    started = start_worker("--queue", "default", "--queue", "emails", lease_ttl_s=LEASE_TTL_S)
    started.wait_for_log(r"Worker process started")
    return started


def test_a_worker_renewing_in_the_other_queues_is_healthy(
    junk_key: str, probe: Probe, worker: Command
) -> None:
    healthy = until_exit(probe, HealthCode.HEALTHY)
    kill_group(worker)
    facts = f"host={HOST} live=1 min_processes=1 queues={QUEUES} lease_ttl_s=1 left_out={junk_key}"
    assert healthy.stdout == f"Healthy {facts}: {LEFT_OUT}.\n"
    assert healthy.stderr == skipped_line(junk_key) + "\n"


def test_a_dead_worker_fails_the_probe_naming_the_key_even_as_liveness(
    junk_key: str, probe: Probe, worker: Command
) -> None:
    kill_group(worker)
    readiness = until_exit(probe, HealthCode.UNREACHABLE)
    liveness = probe("--redis-down-ok")

    assert liveness.returncode == HealthCode.UNREACHABLE, liveness.stderr
    for unhealthy in readiness, liveness:
        reason = unhealthy.stderr.splitlines()
        assert reason[0] == skipped_line(junk_key)
        assert reason[1].startswith(
            f"CommandError: Unhealthy host={HOST} live=0 min_processes=1 queues={QUEUES} "
            f"lease_ttl_s=1 left_out={junk_key} last_seen="
        )
        assert reason[1].endswith(
            "live_elsewhere=0: fewer worker processes of this host renewed their leases within "
            f"lease_ttl than --min-processes in the queues read, and {LEFT_OUT}."
        )


def test_a_probe_of_the_other_queues_reads_no_such_key(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    probe: Probe,
) -> None:
    redis_client.set(backend.broker.queue_keys("reports").workers, "junk")
    too_few = probe("--queue", "default")
    assert too_few.returncode == HealthCode.TOO_FEW
    assert "left_out" not in one_line(too_few.stderr)


def test_the_queues_page_and_the_scrape_show_the_workers_of_the_other_queues(
    db: None,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = backend.broker.queue_keys("reports").workers
    redis_client.set(key, "junk")
    lease = start(backend, add.enqueue(1, 1).id)
    backend.broker.renew("web-7.example.com:4242:ab12", [lease], threads=12)
    operator = logged_in(staff_user("operator", "view_queue"))

    with caplog.at_level(logging.WARNING, logger="django_threadmill"):
        response = operator.get(QUEUES_URL)
        found = scrape()

    page = response.content.decode()
    assert response.status_code == 200
    assert "wrong kind" not in page
    assert "<td>web-7.example.com:4242:ab12</td><td>web-7.example.com</td><td>4242</td>" in page
    assert '<td class="num">12</td><td class="num">1</td><td>default</td>' in page
    assert value(found, "threadmill_backend_up") == 1
    assert value(found, "threadmill_workers") == 1
    assert value(found, "threadmill_worker_threads") == 12
    assert [r.getMessage() for r in caplog.records] == [skipped_line(key)] * 2


def test_a_read_of_only_such_keys_counts_nothing_and_says_so(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """Both heartbeat keys of one queue are named, each with its WARNING."""
    keys = backend.broker.queue_keys("reports")
    redis_client.set(keys.workers, "junk")
    redis_client.rpush(keys.stopped, "junk")
    read = Inspector(backend.broker).host_sightings(["reports"], HOST, 0)
    assert read.sightings == []
    assert read.signed_off_ms is None
    assert read.unread == (keys.stopped, keys.workers)
    assert [r.getMessage() for r in caplog.records] == [
        skipped_line(keys.stopped),
        skipped_line(keys.workers),
    ]
