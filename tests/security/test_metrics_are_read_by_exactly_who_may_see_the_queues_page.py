"""threadmill/metrics serve the queues page's numbers: a logged-in user reads them exactly when
the admin would show that user the queues page. Staff status alone, or the task permissions
alone, read them all before, where the admin showed such a user nothing."""

import pytest
from django.contrib.auth.models import User

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import add
from tests.admin.conftest import QUEUES_URL, logged_in, staff_user

METRICS_URL = "/threadmill/metrics"
REFUSED = (
    "These credentials may not read the metrics. Log in as staff with the "
    "django_threadmill.view_queue permission, or send an alias's metrics_token as a bearer token."
)


def user(kind: str) -> User:
    """Make the user ``kind`` names: staff with some permissions, or one the admin refuses."""
    match kind:
        case "superuser":
            return User.objects.create_superuser("root", password="pw")
        case "not staff, view_queue":
            found = staff_user("plain", "view_queue")
            found.is_staff = False
            found.save()
            return found
        case "inactive superuser":
            return User.objects.create_superuser("gone", password="pw", is_active=False)
        case _:
            return staff_user("staff", *kind.split(", ")[1:])


@pytest.mark.parametrize(
    ("kind", "metrics_status"),
    [
        ("staff", 403),
        ("staff, view_task, change_task", 403),
        ("staff, view_queue", 200),
        ("staff, change_queue", 200),
        ("superuser", 200),
        ("not staff, view_queue", 403),
        ("inactive superuser", 401),  # logged out by Django's auth: no credentials
    ],
)
def test_the_metrics_open_to_exactly_who_may_see_the_queues_page(
    backend: ThreadmillTaskBackend, db: None, kind: str, metrics_status: int
) -> None:
    add.enqueue(1, 2)
    client = logged_in(user(kind))

    queues = client.get(QUEUES_URL)
    metrics = client.get(METRICS_URL)

    assert metrics.status_code == metrics_status
    assert (metrics.status_code == 200) == (queues.status_code == 200)
    if metrics.status_code == 200:
        ready = 'threadmill_queue_tasks{backend="default",queue="default",state="ready"} 1.0'
        assert ready in metrics.content.decode()
    else:
        assert b"threadmill_queue_tasks" not in metrics.content
    if metrics.status_code == 403:
        assert metrics.content.decode() == REFUSED
