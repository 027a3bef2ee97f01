"""The queues page: counts per alias and queue, workers, and every Threadmill alias."""

from django.test import Client, override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from django_threadmill.compat import task_backends
from testproject.example.tasks import add
from tests.admin.conftest import QUEUES_URL, TASKS_URL, failed_task, successful_task
from tests.backend_support import start, succeed
from tests.conftest import tasks_setting


def test_shows_counts_per_queue(operator: Client, backend: ThreadmillTaskBackend) -> None:
    failed_task(backend)
    successful_task(backend)
    add.enqueue(1, 1)

    response = operator.get(QUEUES_URL)

    assert response.status_code == 200
    page = response.content.decode()
    assert "Backend “default”" in page
    assert 'status=ready">1</a>' in page
    assert 'status=failed">1</a>' in page
    assert 'status=successful">1</a>' in page
    assert "No worker has renewed a lease recently." in page
    assert 'title="All time in this queue: 1 successful, 1 failed, 0 retried."' in page


def test_shows_workers_holding_leases(operator: Client, backend: ThreadmillTaskBackend) -> None:
    lease = start(backend, add.enqueue(1, 1).id)
    backend.broker.renew("web-7.example.com:4242:ab12", [lease], threads=12)

    page = operator.get(QUEUES_URL).content.decode()

    assert "<td>web-7.example.com:4242:ab12</td><td>web-7.example.com</td><td>4242</td>" in page
    assert '<td class="num">12</td><td class="num">1</td>' in page  # threads, tasks held


def test_lists_every_threadmill_alias_and_no_other(operator: Client, two_aliases: None) -> None:
    task_backends["bulk"].broker.register_queues(["bulk-in"])

    page = operator.get(QUEUES_URL).content.decode()

    assert "Backend “default”" in page
    assert "Backend “bulk”" in page
    assert "bulk-in" in page
    assert "dummy" not in page


def test_an_unreachable_redis_is_reported_in_its_block(
    operator: Client, redis_url: str, key_prefix: str
) -> None:
    tasks = tasks_setting(redis_url, key_prefix)
    tasks["down"] = {**tasks["default"], "LOCATION": "redis://127.0.0.1:1/0"}  # type: ignore[dict-item]
    with override_settings(TASKS=tasks):
        response = operator.get(QUEUES_URL)

    assert response.status_code == 200
    page = response.content.decode()
    assert "Backend “down”" in page
    assert "Redis at redis://127.0.0.1:1/0 is unreachable" in page


def test_an_alias_with_a_slash_has_working_pages(
    operator: Client, redis_url: str, key_prefix: str
) -> None:
    """The alias sits in the admin's URLs: with a "/" in it, every page linking to its tasks
    or queues failed to reverse (NoReverseMatch, a 500), the queues page and task list too."""
    tasks = tasks_setting(redis_url, key_prefix)
    tasks["eu/west"] = {**tasks["default"], "OPTIONS": {"key_prefix": f"{key_prefix}-eu"}}  # type: ignore[dict-item]
    with override_settings(TASKS=tasks):
        backend = task_backends["eu/west"]
        task_id = add.using(backend="eu/west").enqueue(1, 2).id
        succeed(backend, task_id, 3)
        detail = f"{TASKS_URL}eu/west/{task_id}/"
        pause = f"{QUEUES_URL}eu/west/default/pause/"

        for url in (QUEUES_URL, TASKS_URL, detail, f"{detail}raw/result/"):
            response = operator.get(url)
            assert response.status_code == 200, url
        assert f'href="{detail}"' in operator.get(TASKS_URL).content.decode()
        assert f'action="{pause}"' in operator.get(QUEUES_URL).content.decode()
        assert operator.post(pause, {"post": "yes", "reason": "maintenance"}).status_code == 302
        assert Inspector(backend.broker).paused(["default"])["default"].reason == "maintenance"


def test_a_hand_written_name_that_is_no_queue_is_left_out(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    """Only a hand-written SADD puts one there: an empty name failed the page with a 500 (no
    pause URL), a name with a "/" linked to another queue, and bytes that are not UTF-8 failed
    the read."""
    add.enqueue(1, 1)
    backend.broker.client.sadd(backend.broker.keyspace.queues, "", "a/b", b"\xff")

    assert backend.broker.queues() == ["default"]
    assert operator.get(QUEUES_URL).status_code == 200
