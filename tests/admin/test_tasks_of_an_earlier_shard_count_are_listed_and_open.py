"""After a change of ``queue_shards``, the admin lists, opens and purges the tasks stored under
the earlier count (docs/scaling.md, Changing the shard count).

Before, the task list, a task's page, the id search, the damaged-records table and a purge
reached only the count the settings give: the queues page's "ready" link, summing every count,
led to a list without the old count's tasks, opening one (from the list, a log line, the
damaged-records table) answered 404 "it never existed, or its result expired", and a purge
left the old count's results in Redis, on the queues page and in its own preview.
"""

import re
from collections.abc import Iterator

import pytest
import redis
from django.contrib.messages import get_messages
from django.test import Client, override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import task_backends
from django_threadmill.testing import drain
from testproject.example.tasks import add, fail
from tests.admin.conftest import QUEUES_URL, TASKS_URL, detail_url, page
from tests.conftest import tasks_setting

EARLIER = {"queue_shards": {"default": 3}}  # the count the package's backend stores under
PURGE_URL = QUEUES_URL + "default/default/purge/"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return EARLIER


@pytest.fixture
def stored(backend: ThreadmillTaskBackend) -> dict[str, str]:
    """Store a SUCCESSFUL, a FAILED and a READY task of "default" under 3 shards."""
    done, failed = add.enqueue(1, 2).id, fail.enqueue("no").id
    drain()
    return {"successful": done, "failed": failed, "ready": add.enqueue(3, 4).id}


@pytest.fixture
def unsharded(redis_url: str, key_prefix: str, stored: dict[str, str]) -> Iterator[None]:
    """Deploy "default" unsharded, once the tasks of the earlier count are stored."""
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix)):
        yield


@pytest.mark.usefixtures("unsharded")
def test_the_list_shows_the_earlier_counts_tasks_and_each_page_opens(
    operator: Client, stored: dict[str, str]
) -> None:
    newer = add.enqueue(5, 6).id

    listed = page(operator, TASKS_URL)
    ready = page(operator, f"{TASKS_URL}?queue=default&status=ready")  # the queues page's link

    for task_id in [*stored.values(), newer]:
        assert f'href="{detail_url(task_id)}"' in listed, task_id
    assert "Showing 1 to 4 of 4." in listed
    assert f'href="{detail_url(stored["ready"])}"' in ready
    assert f'href="{detail_url(newer)}"' in ready
    for state, task_id in stored.items():
        shown = page(operator, detail_url(task_id))
        assert f"tm-state-{state}" in shown, state
        assert (
            "Stored under 3 shards of queue default, where the settings give 1 (docs/scaling.md, "
            "Changing the shard count): requeue and cancel reach it only with the settings it "
            "was stored under."
        ) in shown
        assert "Requeue…" not in shown
        assert "Cancel…" not in shown
    assert "Stored under" not in page(operator, detail_url(newer))
    assert "Cancel…" in page(operator, detail_url(newer))


@pytest.mark.usefixtures("unsharded")
def test_the_id_search_finds_a_task_of_the_earlier_count(
    operator: Client, stored: dict[str, str]
) -> None:
    for task_id in (stored["failed"], stored["failed"].partition("@")[0]):
        found = page(operator, f"{TASKS_URL}?q={task_id}")
        assert "1 task with id" in found, task_id
        assert f'href="{detail_url(stored["failed"])}"' in found


def test_the_damaged_records_table_lists_the_earlier_counts(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    stored: dict[str, str],
    redis_url: str,
    key_prefix: str,
) -> None:
    shard = backend.broker.part_of(stored["ready"])
    assert shard is not None
    at_ms = backend.broker.server_time_ms()
    damaged = backend.broker.queue_keys(shard).damaged
    redis_client.hset(damaged, stored["ready"], f"{at_ms} acquire: its key holds no hash")

    with override_settings(TASKS=tasks_setting(redis_url, key_prefix)):
        shown = page(operator, QUEUES_URL)
        forgotten = list(
            task_backends["default"].broker.forget_damaged("default", [stored["ready"]])
        )

    assert re.search(
        rf'<td>default</td><td><a href="{re.escape(detail_url(stored["ready"]))}">'
        rf"{re.escape(stored['ready'])}</a></td><td>[^<]+</td>"
        r"<td>acquire</td><td>its key holds no hash</td>",
        shown,
    )
    assert forgotten == [[stored["ready"]]]  # one shard's dropped, of the earlier count
    assert not redis_client.exists(damaged)


@pytest.mark.usefixtures("unsharded")
def test_a_purge_deletes_the_earlier_counts_results_too(
    operator: Client, stored: dict[str, str]
) -> None:
    newer = add.enqueue(5, 6).id
    drain()

    preview = page(operator, PURGE_URL)
    response = operator.post(PURGE_URL, {"post": "yes", "state": ""})

    assert "The queue holds 3 finished results" in preview
    assert "2 SUCCESSFUL," in preview
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Purged 3 finished results (SUCCESSFUL and FAILED) from default / default."
    ]
    listed = page(operator, TASKS_URL)
    for task_id in (stored["successful"], stored["failed"], newer):
        assert task_id not in listed
    assert f'href="{detail_url(stored["ready"])}"' in listed  # waiting: left alone
