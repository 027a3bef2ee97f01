"""Task detail: every stored fact about one task, and "show all" for long values."""

from datetime import timedelta

import pytest
import redis
from django.test import Client
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.workflows import chain, step
from testproject.example.tasks import add, echo
from tests.admin.conftest import detail_url, failed_task
from tests.backend_support import reserve, start, succeed


def page_of(client: Client, task_id: str) -> str:
    response = client.get(detail_url(task_id))
    assert response.status_code == 200
    return response.content.decode()


def test_failed_task_shows_path_args_error_and_worker(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    page = page_of(operator, failed_task(backend, "disk full"))

    assert "<td>testproject.example.tasks.add</td>" in page
    assert '<span class="tm-state tm-state-failed">FAILED</span>' in page
    assert "Attempt 1: builtins.ValueError" in page
    assert "ValueError: disk full" in page
    assert "<div>worker-test-1</div>" in page
    assert "<th>Enqueued</th>" in page
    assert "<th>Finished</th>" in page
    assert "[\n  1,\n  2\n]" in page


def test_running_task_shows_lease_holder_and_deadline(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = add.enqueue(1, 1).id
    start(backend, task_id, worker="web1:77:aa")

    page = page_of(operator, task_id)

    assert "<tr><th>Lease holder</th><td>web1:77:aa</td></tr>" in page
    assert "<th>Lease deadline</th>" in page
    assert "(host web1, pid 77)" in page


def test_reserved_task_is_held_by_a_prefetch_buffer(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = add.enqueue(1, 1).id
    reserve(backend, task_id)

    page = page_of(operator, task_id)

    assert "READY (reserved by a worker)" in page
    assert "a worker&#x27;s prefetch buffer (not started yet)" in page


def test_waiting_tasks_show_their_place_or_due_time(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    first, second = add.enqueue(1, 1).id, add.enqueue(2, 2).id
    later = add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(3, 3).id

    assert "<td>2 (1 runs next)</td>" in page_of(operator, second)
    assert "<td>1 (1 runs next)</td>" in page_of(operator, first)
    assert "<th>Due (delayed)</th>" in page_of(operator, later)


def test_long_return_value_is_cut_with_a_link_to_all_of_it(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = echo.enqueue("x").id
    succeed(backend, task_id, "y" * 5000)

    page = page_of(operator, task_id)
    whole = operator.get(detail_url(task_id) + "raw/result/")

    assert "Showing 2000 of 5002 characters." in page
    assert f'href="{detail_url(task_id)}raw/result/">Show all</a>' in page
    assert whole.content.decode() == '"' + "y" * 5000 + '"'


def test_unknown_task_is_404(operator: Client, backend: ThreadmillTaskBackend) -> None:
    assert operator.get(detail_url("0" * 32 + "@default")).status_code == 404
    assert operator.get(detail_url("no-queue-in-this-id")).status_code == 404
    assert operator.get(detail_url(add.enqueue(1, 1).id, alias="nope")).status_code == 404


@pytest.mark.parametrize("payload", ["{not json", '{"args": []}'])
def test_corrupt_payload_is_shown_raw_with_the_reason(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, payload: str
) -> None:
    task_id = add.enqueue(1, 1).id
    redis_client.hset(backend.broker.queue_keys("default").record(task_id), "payload", payload)

    page = page_of(operator, task_id)

    assert "it was corrupted" in page


def test_a_step_of_a_cancelled_workflow_offers_no_requeue_and_says_why(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    """The page offered "Requeue…" for it, which the action then refused."""
    flow = chain(step(add, 1, 1), step(add, 2)).enqueue()
    first = flow.results[0]
    assert first is not None
    assert flow.cancel("not needed")

    page = page_of(operator, first.id)

    assert '<span class="tm-state tm-state-failed">FAILED</span>' in page
    assert 'id="tm-requeue"' not in page
    assert "cancelled, so this step is not requeued: enqueue the task anew to run it" in page
    assert 'id="tm-requeue"' in page_of(operator, failed_task(backend))  # a task of its own
