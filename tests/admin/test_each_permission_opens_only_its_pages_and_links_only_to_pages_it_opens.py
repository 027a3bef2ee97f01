"""Each admin permission opens its own pages and actions, 403 elsewhere with nothing changed,
and a page links only to pages its reader may open (docs/admin.md, Permissions).

The queues page linked each queue name, its counts and its damaged records' ids to the task
pages whatever the reader's permissions, so staff who may see queues but not tasks met six
links a queue, and one a damaged record, that each answered 403. Django's own admin links an
object only for those who may view it.
"""

import re

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from testproject.example.tasks import add
from tests.admin.conftest import (
    ACTION_URL,
    QUEUES_URL,
    TASKS_URL,
    detail_url,
    failed_task,
    logged_in,
    page,
    staff_user,
)
from tests.backend_support import start

SECTION = "/admin/django_threadmill/"
PURGE_URL = QUEUES_URL + "default/default/purge/"
PAUSE_URL = QUEUES_URL + "default/default/pause/"
RESUME_URL = QUEUES_URL + "default/default/resume/"
WORKFLOWS_URL = TASKS_URL + "workflows/"
# The permissions a staff user may hold, alone or as the docs pair them.
HOLDINGS = [
    (),
    ("view_queue",),
    ("change_queue",),
    ("view_task",),
    ("change_task",),
    ("view_queue", "view_task"),
    ("view_queue", "change_task"),
    ("change_queue", "view_task"),
]


def may(held: tuple[str, ...], model: str, *, change: bool) -> bool:
    """Whether ``held`` allows looking at (or, with ``change``, acting on) ``model``'s pages:
    the change permission implies the view one, as in Django's admin."""
    return f"change_{model}" in held or (not change and f"view_{model}" in held)


def held_id(held: tuple[str, ...]) -> str:
    return ",".join(held) or "none"


# Those that may not act on tasks, and those that may not act on queues.
WITHOUT_CHANGE_TASK = [held for held in HOLDINGS if not may(held, "task", change=True)]
WITHOUT_CHANGE_QUEUE = [held for held in HOLDINGS if not may(held, "queue", change=True)]


@pytest.fixture
def tasks(backend: ThreadmillTaskBackend, redis_client: redis.Redis) -> dict[str, str]:
    """A task in each state the queues page links, and a damaged record it lists by id."""
    ids = {"running": add.enqueue(1, 1).id}
    start(backend, ids["running"])
    ids["failed"] = failed_task(backend)
    ids["damaged"] = add.enqueue(2, 2).id
    redis_client.delete(backend.broker.record_key(ids["damaged"]))
    redis_client.rpush(backend.broker.record_key(ids["damaged"]), "x")  # a list, not a hash
    backend.broker.acquire("default", 10)  # sets the damaged one aside
    ids["ready"] = add.enqueue(3, 3).id
    return ids


def client_holding(held: tuple[str, ...]) -> Client:
    return logged_in(staff_user("staff", *held))


def section_links(html: str) -> list[str]:
    """Return every link of ``html`` into the Threadmill section, entities unescaped."""
    return [
        href.replace("&amp;", "&")
        for href in re.findall(r'href="([^"]+)"', html)
        if href.startswith(SECTION)
    ]


@pytest.mark.parametrize("held", HOLDINGS, ids=held_id)
def test_every_section_link_on_a_page_opens_for_who_sees_it(
    held: tuple[str, ...], tasks: dict[str, str], db: None
) -> None:
    client = client_holding(held)
    pages = [QUEUES_URL, TASKS_URL, WORKFLOWS_URL, detail_url(tasks["failed"])]

    for url in pages:
        shown = client.get(url)
        if shown.status_code == 403:
            continue
        for link in section_links(shown.content.decode()):
            assert client.get(link).status_code == 200, f"{url} links {link}, which refuses"


def test_the_queues_page_links_the_task_pages_for_who_may_see_them(
    tasks: dict[str, str], db: None
) -> None:
    links = section_links(page(client_holding(("view_queue", "view_task")), QUEUES_URL))

    assert f"{TASKS_URL}?backend=default&queue=default&status=failed" in links
    assert detail_url(tasks["damaged"]) in links


def test_the_queues_page_shows_the_counts_unlinked_to_who_may_not_see_tasks(
    tasks: dict[str, str], db: None
) -> None:
    shown = page(client_holding(("view_queue",)), QUEUES_URL)

    assert not [link for link in section_links(shown) if link.startswith(TASKS_URL)]
    assert '<td class="num">1</td>' in shown  # FAILED, as text
    assert f"<td>{tasks['damaged']}</td>" in shown


@pytest.mark.parametrize("held", HOLDINGS, ids=held_id)
def test_each_view_answers_403_without_its_permission(
    held: tuple[str, ...], tasks: dict[str, str], db: None
) -> None:
    client = client_holding(held)
    reads = {
        QUEUES_URL: "queue",
        TASKS_URL: "task",
        WORKFLOWS_URL: "task",
        detail_url(tasks["failed"]): "task",
        detail_url(tasks["failed"]) + "raw/args/": "task",
    }

    for url, model in reads.items():
        expected = 200 if may(held, model, change=False) else 403
        assert client.get(url).status_code == expected, url
    assert (client.get(PURGE_URL).status_code == 200) is may(held, "queue", change=True)
    assert (client.get(PAUSE_URL).status_code == 405) is may(held, "queue", change=True)


ACTIONS = {
    "requeue": {"action": "requeue", "_selected_action": "default:{failed}"},
    "cancel": {"action": "cancel", "_selected_action": "default:{ready}"},
    "requeue every FAILED": {"action": "requeue", "across": "1"},
    "cancel every READY": {"action": "cancel", "across": "1"},
}


@pytest.mark.parametrize("held", WITHOUT_CHANGE_TASK, ids=held_id)
@pytest.mark.parametrize("action", ACTIONS)
def test_a_task_action_without_the_change_task_permission_is_refused_and_changes_nothing(
    held: tuple[str, ...],
    action: str,
    tasks: dict[str, str],
    backend: ThreadmillTaskBackend,
    db: None,
) -> None:
    client = client_holding(held)
    data = {name: value.format(**tasks) for name, value in ACTIONS[action].items()}

    assert client.post(ACTION_URL, data).status_code == 403  # the confirmation
    assert client.post(ACTION_URL, {**data, "post": "yes"}).status_code == 403

    assert backend.get_result(tasks["failed"]).status == "FAILED"
    assert backend.get_result(tasks["ready"]).status == "READY"


@pytest.mark.parametrize("held", WITHOUT_CHANGE_QUEUE, ids=held_id)
def test_a_queue_action_without_the_change_queue_permission_is_refused_and_changes_nothing(
    held: tuple[str, ...], tasks: dict[str, str], backend: ThreadmillTaskBackend, db: None
) -> None:
    client = client_holding(held)
    inspector = Inspector(backend.broker)

    for url in (PURGE_URL, PAUSE_URL):
        assert client.post(url, {"post": "yes"}).status_code == 403
    assert client.post(PURGE_URL, {"post": "yes", "state": "failed"}).status_code == 403
    assert inspector.paused(["default"]) == {}
    assert backend.get_result(tasks["failed"]).status == "FAILED"

    backend.broker.pause("default", "ada in the admin")
    assert client.post(RESUME_URL, {"post": "yes"}).status_code == 403
    assert "default" in inspector.paused(["default"])
