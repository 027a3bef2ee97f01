"""The queues page shows each queue's limits and how full they are."""

import re

import pytest
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import add, slow
from tests.admin.conftest import QUEUES_URL
from tests.backend_support import reserve, start


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_limits": {"reports": {"concurrency": 2}, "emails": {"rate": "600/m"}}}


def test_limits_and_their_use_are_shown(operator: Client, backend: ThreadmillTaskBackend) -> None:
    start(backend, slow.enqueue(1).id)
    email = add.using(queue_name="emails").enqueue(1, 1)
    add.enqueue(1, 1)

    page = operator.get(QUEUES_URL).content.decode()
    assert "<td>1 of 2 slots held</td>" in page
    assert "<td>600/m, next start now</td>" in page
    assert '<span class="tm-muted">none</span>' in page  # the default queue has no limits

    reserve(backend, email.id)  # takes the token: the next one comes 100 ms later
    page = operator.get(QUEUES_URL).content.decode()
    wait = re.search(r"<td>600/m, next start (in (\d+) ms|now)</td>", page)
    assert wait is not None
    assert wait[2] is None or 0 < int(wait[2]) <= 100
