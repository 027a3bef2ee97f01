"""Fixtures for the admin tests: clients for staff with and without the change permission."""

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.views.backends import source_or_404
from tests.backend_support import fail, succeed
from testproject.example.tasks import add

TASKS_URL = "/admin/django_threadmill/task/"
QUEUES_URL = "/admin/django_threadmill/queue/"


def staff_user(username: str, *codenames: str) -> User:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="django_threadmill", codename__in=codenames)
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


def failed_task(backend: ThreadmillTaskBackend, message: str = "boom") -> str:
    """Enqueue ``add`` and record it FAILED with a ValueError(message)."""
    result = add.enqueue(1, 2)
    fail(backend, result.id, ValueError(message))
    return result.id


def successful_task(backend: ThreadmillTaskBackend, value: object = 3) -> str:
    result = add.enqueue(1, 2)
    succeed(backend, result.id, value)
    return result.id


def inspector(alias: str = "default"):  # type: ignore[no-untyped-def]
    return source_or_404(alias).inspector
