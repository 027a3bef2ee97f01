"""The task list: each filter, the id search, and the backend choice across aliases."""

from datetime import timedelta

import pytest
import redis
from django.test import Client
from django.utils import timezone

from django_threadmill.admin import results
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus, task_backends
from testproject.example.tasks import add, send_welcome
from tests.admin.conftest import TASKS_URL, failed_task, successful_task
from tests.backend_support import start, succeed


@pytest.fixture
def tasks(backend: ThreadmillTaskBackend) -> dict[str, str]:
    """One task in each status, on two queues."""
    running = add.enqueue(5, 5).id
    start(backend, running)
    email = send_welcome.enqueue("a@example.com").id
    succeed(backend, email, "sent")
    return {
        "failed": failed_task(backend),
        "successful": successful_task(backend),
        "email": email,
        "ready": add.enqueue(1, 1).id,
        "delayed": add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(2, 2).id,
        "running": running,
    }


def listed(client: Client, **query: str) -> str:
    response = client.get(TASKS_URL, query)
    assert response.status_code == 200
    return response.content.decode()


def shown(page: str, tasks: dict[str, str]) -> set[str]:
    return {name for name, task_id in tasks.items() if task_id in page}


def test_default_lists_every_state_running_and_waiting_first(
    operator: Client, tasks: dict[str, str]
) -> None:
    page = listed(operator)
    assert shown(page, tasks) == set(tasks)
    order = sorted(tasks, key=lambda name: page.index(tasks[name]))
    assert order[:3] == ["running", "ready", "delayed"]
    assert '<option value="" selected>All states</option>' in page


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("finished", {"failed", "successful", "email"}),
        ("successful", {"successful", "email"}),
        ("failed", {"failed"}),
        ("ready", {"ready"}),
        ("delayed", {"delayed"}),
        ("running", {"running"}),
    ],
)
def test_status_filter(
    operator: Client, tasks: dict[str, str], status: str, expected: set[str]
) -> None:
    assert shown(listed(operator, status=status), tasks) == expected


def test_queue_filter(operator: Client, tasks: dict[str, str]) -> None:
    assert shown(listed(operator, queue="emails"), tasks) == {"email"}


def test_task_path_filter(operator: Client, tasks: dict[str, str]) -> None:
    assert shown(listed(operator, task="send_WELCOME"), tasks) == {"email"}


def test_search_by_full_id_or_without_its_queue(operator: Client, tasks: dict[str, str]) -> None:
    email = tasks["email"]

    assert shown(listed(operator, q=email), tasks) == {"email"}
    assert shown(listed(operator, q=email.split("@")[0]), tasks) == {"email"}
    assert "0 tasks with id “nope”." in listed(operator, q="nope")


def test_backend_filter_covers_each_alias(
    operator: Client, two_aliases: None, backend: ThreadmillTaskBackend
) -> None:
    bulk = task_backends["bulk"]
    bulk_id = add.using(backend="bulk", queue_name="bulk-in").enqueue(1, 2).id
    succeed(bulk, bulk_id, 3)
    default_id = successful_task(backend)

    everything = listed(operator)
    only_bulk = listed(operator, backend="bulk")

    assert bulk_id in everything
    assert default_id in everything
    assert bulk_id in only_bulk
    assert default_id not in only_bulk
    assert '<option value="bulk">bulk</option>' in everything
    assert '<option value="dummy">' not in everything


def test_a_queue_the_backend_does_not_have_stays_chosen(
    operator: Client, tasks: dict[str, str]
) -> None:
    page = listed(operator, backend="default", queue="nowhere")

    assert '<option value="nowhere" selected>nowhere (no such queue in default)</option>' in page
    assert '<option value="">All queues</option>' in page  # offered, not chosen
    assert not shown(page, tasks)


def test_a_filtered_page_without_matches_still_offers_the_whole_filter(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A filtered page reads at most SCAN_BUDGET entries: the FAILED task past the two newer
    results is on a later page, and the action on the whole filter reaches it."""
    monkeypatch.setattr(results, "SCAN_BUDGET", 2)
    older = failed_task(backend)
    newer = [successful_task(backend), successful_task(backend)]
    done = backend.broker.queue_keys("default").done
    redis_client.zadd(done, {task_id: n for n, task_id in enumerate([older, *newer])}, xx=True)

    page = listed(operator, status="failed")

    assert older not in page
    assert "No task matches in the 2 index entries read; the index holds more: Search on" in page
    assert 'id="tm-across"' in page
    assert 'name="index" value="0"' not in page  # no row to tick, so no "Go"
    across = {"action": "requeue", "across": "1", "status": "failed", "post": "yes"}
    assert operator.post(TASKS_URL + "action/", across).status_code == 302
    assert backend.get_result(older).status == TaskResultStatus.READY
