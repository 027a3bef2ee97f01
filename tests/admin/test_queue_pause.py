"""Pause and resume a queue from the queues page: confirmed first, change permission, logged,
and obeyed by a running worker."""

import logging

import pytest
import redis
from django.contrib.auth.models import User
from django.contrib.messages import get_messages
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from django_threadmill.broker.pausing import QueuePause
from testproject.example.tasks import add
from tests.admin.conftest import QUEUES_URL
from tests.pausing import looked_again, still_ready, succeeded
from tests.support import running, wait_until, worker

PAUSE_URL = QUEUES_URL + "default/default/pause/"
RESUME_URL = QUEUES_URL + "default/default/resume/"


def pause_of(backend: ThreadmillTaskBackend) -> QueuePause | None:
    return Inspector(backend.broker).paused(["default"]).get("default")


def confirmed(client: Client, url: str, **fields: str) -> list[str]:
    """Post a confirmed pause or resume; return the messages it left."""
    response = client.post(url, {"post": "yes", **fields})
    assert response.status_code == 302
    assert response["Location"] == QUEUES_URL
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_the_queues_page_offers_pause_and_shows_a_paused_queue(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    add.enqueue(1, 1)
    page = operator.get(QUEUES_URL).content.decode()
    assert f'<form method="post" action="{PAUSE_URL}">' in page
    assert "PAUSED" not in page

    backend.broker.pause("default", "ada in the admin", "deploy")
    page = operator.get(QUEUES_URL).content.decode()

    assert f'<form method="post" action="{RESUME_URL}">' in page
    assert f'<form method="post" action="{PAUSE_URL}">' not in page
    assert '<span class="tm-state tm-paused" title="Paused 0 s ago by ada in the admin: ' in page
    assert 'deploy. Workers take none of its tasks until it is resumed.">PAUSED</span>' in page


def test_pause_asks_for_confirmation_first(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    add.enqueue(1, 1)

    response = operator.post(PAUSE_URL)

    assert response.status_code == 200
    page = response.content.decode()
    assert "Pause queue “default” in backend “default”" in page
    assert "The queue is not paused.\n  It holds 1 READY task and 0 delayed." in page
    assert 'name="reason"' in page
    assert 'value="Yes, pause it"' in page
    assert pause_of(backend) is None


def test_pause_then_resume_records_who_and_logs_it(
    operator: Client, backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="django_threadmill.broker.pausing"):
        messages = confirmed(operator, PAUSE_URL, reason="  provider down  ")
    assert messages == [
        "Paused default / default: workers take none of its tasks until it is resumed."
    ]
    pause = pause_of(backend)
    assert pause is not None
    assert (pause.by, pause.reason) == ("operator in the admin", "provider down")
    assert caplog.messages == [
        "Queue paused backend=default queue=default by=operator in the admin reason=provider down"
    ]

    confirmation = operator.post(RESUME_URL).content.decode()
    assert "Resume queue “default” in backend “default”" in confirmation
    assert "by operator in the admin: provider down." in confirmation
    assert 'name="reason"' not in confirmation

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="django_threadmill.broker.pausing"):
        messages = confirmed(operator, RESUME_URL)
    assert messages == ["Resumed default / default: idle workers were woken to take its tasks."]
    assert pause_of(backend) is None
    assert caplog.messages == [
        "Queue resumed backend=default queue=default by=operator in the admin"
    ]


def test_a_running_worker_obeys_a_pause_and_a_resume_from_the_admin(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
) -> None:
    with running(worker(redis_url, key_prefix, "--threads", "2")):
        first = add.enqueue(1, 1)
        wait_until(lambda: succeeded(first), "the worker running a task before the pause")

        confirmed(operator, PAUSE_URL, reason="a test")
        held = [add.enqueue(n, n) for n in range(3)]
        looked_again(backend, redis_client)
        assert still_ready(held)

        confirmed(operator, RESUME_URL)
        for result in held:
            wait_until(lambda r=result: succeeded(r), "the held tasks running after resume")


def test_a_queue_paused_meanwhile_keeps_its_pause(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    backend.broker.pause("default", "bob with manage.py threadmill_queue", "first")
    assert confirmed(operator, PAUSE_URL) == [
        "default / default was paused already; nothing changed."
    ]
    pause = pause_of(backend)
    assert pause is not None
    assert (pause.by, pause.reason) == ("bob with manage.py threadmill_queue", "first")


def test_a_queue_resumed_meanwhile_is_reported(operator: Client) -> None:
    assert confirmed(operator, RESUME_URL) == ["default / default was not paused; nothing changed."]


def test_a_viewer_sees_the_pause_but_may_not_change_it(
    viewer: Client, backend: ThreadmillTaskBackend
) -> None:
    backend.broker.pause("default", "ada in the admin")
    page = viewer.get(QUEUES_URL).content.decode()
    assert ">PAUSED</span>" in page
    assert "Resume…" not in page
    assert "Pause…" not in page
    assert viewer.post(RESUME_URL, {"post": "yes"}).status_code == 403
    assert pause_of(backend) is not None


def test_only_a_post_with_a_csrf_token_pauses(
    operator: Client, backend: ThreadmillTaskBackend, db: None
) -> None:
    assert operator.get(PAUSE_URL).status_code == 405
    client = Client(enforce_csrf_checks=True)
    client.force_login(User.objects.create_superuser("root", password="pw"))
    assert client.post(PAUSE_URL, {"post": "yes"}).status_code == 403
    assert pause_of(backend) is None


@pytest.mark.parametrize(
    "url", [QUEUES_URL + "default/no-such-queue/pause/", QUEUES_URL + "nope/default/resume/"]
)
def test_an_unknown_queue_or_alias_is_404(operator: Client, url: str) -> None:
    assert operator.post(url, {"post": "yes"}).status_code == 404


def test_a_resume_whose_wake_up_redis_refuses_says_it_resumed_and_what_to_fix(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """Not the "Redis is unavailable" page: the queue is resumed (docs/lifecycle.md, Keys of
    another type)."""
    backend.broker.pause("default", "ada in the admin")
    wake = backend.broker.queue_keys("default").wake
    redis_client.set(wake, "another program's value")
    [message] = confirmed(operator, RESUME_URL)
    assert message.startswith("Resumed queue default of backend default, but its idle workers")
    assert f"key {wake} holds a string, not a list. Something other than" in message
    assert pause_of(backend) is None
