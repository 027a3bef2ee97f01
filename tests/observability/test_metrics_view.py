"""threadmill/metrics: what a scrape shows matches what was enqueued and run; who may scrape."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect.sightings import MAX_SIGHTINGS
from testproject.example.tasks import add, fail, send_welcome
from tests.admin.conftest import staff_user
from tests.backend_support import reserve, start
from tests.conftest import tasks_setting
from tests.support import worker

URL = "/threadmill/metrics"
TOKEN = "s3cret-token-for-the-scraper"
ADD, FAIL = "testproject.example.tasks.add", "testproject.example.tasks.fail"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"metrics_token": TOKEN}


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Parse the exposition with prometheus_client's own parser: (name, labels) -> value."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(found: dict, name: str, **labels: str) -> float:
    return found[(name, frozenset({"backend": "default", **labels}.items()))]


def scrape() -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Scrape with the token; return the samples."""
    response = Client().get(URL, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    return samples(response.content.decode())


def run_burst(redis_url: str, key_prefix: str) -> None:
    command = worker(redis_url, key_prefix, "--burst")
    try:
        assert command.wait(60) == 0, command.log
    finally:
        command.close()


def test_a_scrape_counts_what_was_enqueued_and_run(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    for n in range(3):
        add.enqueue(n, n)
    for n in range(2):
        fail.enqueue(f"no {n}")
    run_burst(redis_url, key_prefix)
    add.enqueue(1, 1)
    add.enqueue(2, 2)
    add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(3, 3)
    start(backend, send_welcome.enqueue("a@example.com").id)  # emails: one running
    reserve(backend, send_welcome.enqueue("b@example.com").id)  # ... and one reserved

    response = Client().get(URL, headers={"Authorization": f"Bearer {TOKEN}"})

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    found = samples(response.content.decode())
    queue = {"queue": "default"}
    assert value(found, "threadmill_queue_tasks", state="ready", **queue) == 2
    assert value(found, "threadmill_queue_tasks", state="delayed", **queue) == 1
    assert value(found, "threadmill_queue_tasks", state="running", **queue) == 0
    emails = {"queue": "emails"}
    assert value(found, "threadmill_queue_tasks", state="running", **emails) == 1
    assert value(found, "threadmill_queue_tasks", state="reserved", **emails) == 1
    assert value(found, "threadmill_queue_tasks", state="ready", **emails) == 0
    assert value(found, "threadmill_oldest_ready_seconds", **queue) >= 0
    finished = "threadmill_tasks_finished_total"
    assert value(found, finished, task=ADD, outcome="successful", **queue) == 3
    assert value(found, finished, task=ADD, outcome="failed", **queue) == 0
    assert value(found, finished, task=FAIL, outcome="failed", **queue) == 2
    assert value(found, "threadmill_task_run_seconds_count", task=ADD, **queue) == 3
    assert value(found, "threadmill_task_run_seconds_bucket", task=ADD, le="+Inf", **queue) == 3
    assert value(found, "threadmill_task_wait_seconds_count", task=FAIL, **queue) == 2
    assert value(found, "threadmill_retries_total", task=FAIL, **queue) == 0
    assert value(found, "threadmill_leases_expired_total", task=ADD, **queue) == 0
    assert ("threadmill_workers", frozenset({"backend": "default"}.items())) in found


def test_staff_may_scrape_without_a_token(backend: ThreadmillTaskBackend, db: None) -> None:
    client = Client()
    client.force_login(staff_user("ops", "view_queue"))  # who may see the queues page
    response = client.get(URL)
    assert response.status_code == 200
    assert "threadmill_queue_tasks" in response.content.decode()


def test_anonymous_is_refused(backend: ThreadmillTaskBackend) -> None:
    response = Client().get(URL)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="threadmill"'


@pytest.mark.parametrize("header", [f"Bearer {TOKEN}x", "Bearer ", f"Basic {TOKEN}"])
def test_a_wrong_token_is_refused(backend: ThreadmillTaskBackend, header: str, db: None) -> None:
    response = Client().get(URL, headers={"Authorization": header})
    assert response.status_code in (401, 403)
    assert b"threadmill_" not in response.content


@override_settings(
    MIDDLEWARE=["django.middleware.common.CommonMiddleware"]  # no sessions, no users
)
def test_a_project_without_the_auth_middleware_scrapes_with_a_token(
    backend: ThreadmillTaskBackend,
) -> None:
    assert Client().get(URL).status_code == 401  # no user to read: asked for a token
    response = Client().get(URL, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200


def test_an_unreachable_redis_is_a_503_naming_the_fix(key_prefix: str) -> None:
    down = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    with override_settings(TASKS=tasks_setting(down, key_prefix, metrics_token=TOKEN)):
        response = Client().get(URL, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 503
    assert f"Redis at {down} is unreachable" in response.content.decode()


def test_a_user_who_is_not_staff_is_refused(backend: ThreadmillTaskBackend, db: None) -> None:
    client = Client()
    client.force_login(User.objects.create_user("someone"))
    assert client.get(URL).status_code == 403


def test_worker_threads_sum_the_live_pools_of_workers_heard_from(
    backend: ThreadmillTaskBackend,
) -> None:
    broker = backend.broker
    broker.renew("web1:10:aa", [], ["default"], threads=4)
    broker.renew("web2:20:bb", [], ["default", "emails"], threads=7)
    broker.renew("web3:30:cc", [], ["emails"], threads=32)
    silent_since = broker.server_time_ms() - backend.settings.lease_ttl_ms - 1
    broker.client.zadd(broker.queue_keys("emails").workers, {"web3:30:cc": silent_since})

    found = scrape()
    assert value(found, "threadmill_workers", backend="default") == 2
    assert value(found, "threadmill_worker_threads", backend="default") == 11


def test_every_live_worker_counts_on_a_fleet_past_the_sightings_a_listing_reads(
    backend: ThreadmillTaskBackend,
) -> None:
    """The gauges read every process renewed within lease_ttl, not only the newest 1,000 a
    queue's listing shows (MAX_SIGHTINGS): 1,000 newer ones hid these two."""
    broker = backend.broker
    broker.renew("web1:10:aa", [], ["default"], threads=4)
    broker.renew("web2:20:bb", [], ["default"], threads=7)
    later = broker.server_time_ms() + 1_000
    broker.client.zadd(
        broker.queue_keys("default").workers,
        {f"fleet{n}:1:cc": later for n in range(MAX_SIGHTINGS)},
    )

    found = scrape()
    assert value(found, "threadmill_workers", backend="default") == MAX_SIGHTINGS + 2
    assert value(found, "threadmill_worker_threads", backend="default") == 11


def test_a_paused_queue_reads_one_until_it_is_resumed(backend: ThreadmillTaskBackend) -> None:
    backend.broker.pause("emails", "ada in the admin")

    found = scrape()
    assert value(found, "threadmill_queue_paused", queue="emails") == 1
    assert value(found, "threadmill_queue_paused", queue="default") == 0
    assert value(found, "threadmill_queue_paused", queue="reports") == 0

    backend.broker.resume("emails", "ada in the admin")
    assert value(scrape(), "threadmill_queue_paused", queue="emails") == 0
