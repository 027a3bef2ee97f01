"""Purge finished results of one queue from the queues page: confirmed, counted, scoped."""

import logging

import pytest
import redis
from django.contrib.messages import get_messages
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.lifecycle import DEFAULT_PURGE_BATCH_SIZE
from django_threadmill.compat import TaskResultDoesNotExist, TaskResultStatus
from testproject.example.tasks import add
from tests.admin.conftest import QUEUES_URL, failed_task, successful_task

PURGE_URL = QUEUES_URL + "default/default/purge/"


def exists(backend: ThreadmillTaskBackend, task_id: str) -> bool:
    try:
        backend.get_result(task_id)
    except TaskResultDoesNotExist:
        return False
    return True


def test_confirmation_page_counts_what_would_go(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    failed_task(backend)
    successful_task(backend)

    page = operator.get(PURGE_URL).content.decode()

    assert "The queue holds 2 finished results" in page
    assert "1 SUCCESSFUL," in page
    assert "1 FAILED" in page
    assert 'name="post" value="yes"' in page


def test_purge_failed_only_keeps_the_rest(operator: Client, backend: ThreadmillTaskBackend) -> None:
    failed, done, waiting = failed_task(backend), successful_task(backend), add.enqueue(1, 1).id

    response = operator.post(PURGE_URL, {"post": "yes", "state": "failed"})

    assert response.status_code == 302
    assert response["Location"] == QUEUES_URL
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Purged 1 finished results (FAILED only) from default / default."
    ]
    assert not exists(backend, failed)
    assert exists(backend, done)
    assert backend.get_result(waiting).status == TaskResultStatus.READY


def test_purge_everything_finished(operator: Client, backend: ThreadmillTaskBackend) -> None:
    task_ids = [failed_task(backend), successful_task(backend)]

    response = operator.post(PURGE_URL, {"post": "yes", "state": ""})

    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Purged 2 finished results (SUCCESSFUL and FAILED) from default / default."
    ]
    assert not any(exists(backend, t) for t in task_ids)


@pytest.mark.parametrize(
    "state", ["FAILED", "bogus-means-both", "x" * 100], ids=["capitals", "unknown", "long"]
)
def test_a_state_the_form_never_sends_purges_nothing(
    operator: Client, backend: ThreadmillTaskBackend, state: str
) -> None:
    """It purged SUCCESSFUL and FAILED alike ("FAILED" is not "failed")."""
    task_ids = [failed_task(backend), successful_task(backend)]

    response = operator.post(PURGE_URL, {"post": "yes", "state": state})

    assert response.status_code == 302
    assert response["Location"] == PURGE_URL
    shown = state if len(state) <= 60 else state[:60] + "…"
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Nothing was purged: the purge form sends state “successful” or “failed”, or nothing "
        f"for both, not “{shown}”. Choose which results to purge below and confirm again."
    ]
    assert all(exists(backend, t) for t in task_ids)


def test_a_link_with_a_state_the_form_never_sends_opens_on_both(operator: Client) -> None:
    page = operator.get(PURGE_URL, {"state": "FAILED"}).content.decode()
    assert '<option value="" selected>SUCCESSFUL and FAILED</option>' in page


def test_purge_of_an_unknown_alias_is_404(operator: Client) -> None:
    assert operator.get(QUEUES_URL + "nope/default/purge/").status_code == 404


def test_purge_of_an_unknown_queue_is_404(operator: Client) -> None:
    assert operator.get(QUEUES_URL + "default/no-such-queue/purge/").status_code == 404


def test_a_purge_redis_stops_midway_says_and_logs_what_it_deleted(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    key_prefix: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Its first batch went; the second met a damaged record it could not set aside, as the
    damaged index is of another type. A 503 page hid the results already deleted from the
    operator and from the audit log."""
    purged = [successful_task(backend) for _ in range(DEFAULT_PURGE_BATCH_SIZE)]
    damaged = successful_task(backend)
    # Finished last, in the second batch: dated after the others, since one finished in the same
    # millisecond came before it whenever its id sorted first (Purged 0, in CI).
    done = backend.broker.queue_keys("default").done
    [(_, last_ms)] = redis_client.zrange(done, -1, -1, withscores=True)
    redis_client.zadd(done, {damaged: last_ms + 1})
    record = backend.broker.record_key(damaged)
    redis_client.delete(record)
    redis_client.set(record, "not a hash")
    redis_client.set(f"{key_prefix}:{{default:default}}:damaged", "not a hash either")

    with caplog.at_level(logging.INFO, logger="django_threadmill.admin.audit"):
        response = operator.post(PURGE_URL, {"post": "yes", "state": ""})

    assert response.status_code == 302
    [said] = [str(m) for m in get_messages(response.wsgi_request)]
    assert said.startswith(
        f"Purged {DEFAULT_PURGE_BATCH_SIZE} finished results (SUCCESSFUL and FAILED) from "
        "default / default, then stopped: "
    ), said
    assert said.endswith("Those left are kept: purge again once Redis answers."), said
    assert not any(exists(backend, task_id) for task_id in purged)
    assert caplog.messages == [
        f"Admin purge backend=default queue=default state=finished "
        f"deleted={DEFAULT_PURGE_BATCH_SIZE} incomplete=yes by=operator in the admin"
    ]
