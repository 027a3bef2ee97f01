"""Fixtures for the admin tests: clients for staff with and without the change permission."""

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.contrib.auth.models import Permission, User
from django.contrib.messages import get_messages
from django.test import Client, override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import add
from tests.backend_support import fail, succeed
from tests.conftest import tasks_setting
from tests.support import django_backend

TASKS_URL = "/admin/django_threadmill/task/"
ACTION_URL = TASKS_URL + "action/"
QUEUES_URL = "/admin/django_threadmill/queue/"


def staff_user(username: str, *codenames: str) -> User:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="django_threadmill", codename__in=codenames
        )
    )
    return user


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def operator(db: None) -> Client:
    """Staff who may look at and act on queues and tasks."""
    return logged_in(
        staff_user("operator", "view_queue", "change_queue", "view_task", "change_task")
    )


@pytest.fixture
def viewer(db: None) -> Client:
    """Read-only staff: the view permissions only."""
    return logged_in(staff_user("viewer", "view_queue", "view_task"))


def detail_url(task_id: str, alias: str = "default") -> str:
    return f"{TASKS_URL}{alias}/{task_id}/"


def page(client: Client, url: str) -> str:
    """GET ``url``; check it answered 200 and return its body."""
    response = client.get(url)
    assert response.status_code == 200, response.content.decode()
    return response.content.decode()


def failed_task(backend: ThreadmillTaskBackend, message: str = "boom") -> str:
    """Enqueue ``add`` and record it FAILED with a ValueError(message)."""
    result = add.enqueue(1, 2)
    fail(backend, result.id, ValueError(message))
    return result.id


def successful_task(backend: ThreadmillTaskBackend, value: object = 3) -> str:
    result = add.enqueue(1, 2)
    succeed(backend, result.id, value)
    return result.id


DUMMY_BACKEND = django_backend("dummy.DummyBackend")


@pytest.fixture
def two_aliases(redis_url: str, key_prefix: str) -> Iterator[None]:
    """TASKS with a second Threadmill alias ("bulk") and a non-Threadmill one ("dummy")."""
    tasks = tasks_setting(redis_url, key_prefix)
    tasks["bulk"] = {
        **tasks["default"],  # type: ignore[dict-item]
        "QUEUES": ["bulk-in"],
        "OPTIONS": {"key_prefix": f"{key_prefix}-bulk"},
    }
    tasks["dummy"] = {"BACKEND": DUMMY_BACKEND}
    with override_settings(TASKS=tasks):
        yield


def size_of(reply: Any) -> int:
    """Return the bytes of text in one parsed reply, however nested."""
    if isinstance(reply, bytes | str):
        return len(reply)
    if isinstance(reply, dict):
        return sum(size_of(name) + size_of(value) for name, value in reply.items())
    if isinstance(reply, list | tuple):
        return sum(size_of(item) for item in reply)
    return 0


@pytest.fixture
def bytes_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the bytes of every reply this process reads from Redis, pipelines included."""
    read = [0]
    parse = redis.Redis.parse_response

    def counted(self: redis.Redis, *args: Any, **options: Any) -> Any:
        reply = parse(self, *args, **options)
        read[0] += size_of(reply)
        return reply

    monkeypatch.setattr(redis.Redis, "parse_response", counted)
    return read


def selection(*task_ids: str) -> list[str]:
    """The admin's ids of ``task_ids`` of the default backend, as a selection posts them."""
    return [f"default:{task_id}" for task_id in task_ids]


def post_action(client: Client, data: dict[str, object]) -> list[str]:
    """Post a confirmed action; check it went back to the list and return its messages."""
    response = client.post(ACTION_URL, {"next": TASKS_URL, **data, "post": "yes"})
    assert response.status_code == 302
    assert response["Location"] == TASKS_URL
    return [str(message) for message in get_messages(response.wsgi_request)]


def act(client: Client, action: str, *task_ids: str) -> list[str]:
    """Post a confirmed ``action`` on ``task_ids`` and return the messages it left."""
    return post_action(client, {"action": action, "_selected_action": selection(*task_ids)})
