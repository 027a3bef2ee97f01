"""A Threadmill page that finds nothing says what and why, inside the admin's layout.

Django's own 404 page drops the message unless DEBUG is on (the tests run with it off, as a
production site does): an operator who followed a link to a task whose result expired after the
list was read got a bare "Not Found", where the page means to say it expired or was purged.
"""

import html
import re

import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from tests.admin.conftest import QUEUES_URL, TASKS_URL, detail_url, failed_task, page


def not_found(client: Client, url: str, posted: dict[str, str] | None = None) -> str:
    """Open ``url`` (POST ``posted``, if given); check it answers a 404 page of the admin, with
    its links back, and return the text of its error note."""
    response = client.get(url) if posted is None else client.post(url, posted)
    assert response.status_code == 404
    body = response.content.decode()
    assert 'href="/admin/django_threadmill/"' in body  # the breadcrumbs: a way back
    note = re.search(r'<p class="errornote">(.*?)</p>', body, re.S)
    assert note, body
    return html.unescape(note.group(1))


def test_a_task_whose_result_expired_after_the_list_says_so(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = failed_task(backend)
    assert f'href="{detail_url(task_id)}"' in page(operator, TASKS_URL)
    backend.purge_finished("default")  # or result_ttl passed, before the click

    assert not_found(operator, detail_url(task_id)) == (
        f"No task '{task_id}' in backend 'default': it never existed, or its result expired "
        "(result_ttl) or was purged."
    )


def test_show_all_of_a_damaged_record_names_its_key(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    task_id = failed_task(backend)
    key = backend.broker.record_key(task_id)
    assert key is not None
    redis_client.delete(key)
    redis_client.rpush(key, "x")

    note = not_found(operator, f"{detail_url(task_id)}raw/traceback:1/")

    assert note.startswith(f"Task '{task_id}' cannot be read: its key '{key}' holds a list")


def test_pausing_a_queue_the_backend_does_not_have_names_those_it_has(operator: Client) -> None:
    note = not_found(operator, f"{QUEUES_URL}default/emials/pause/", {"post": "yes"})

    assert note == (
        "Queue 'emials' is not in TASKS['default']['QUEUES'] (default, emails and reports). "
        "Add it there or pick one of those."
    )
