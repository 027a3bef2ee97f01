"""Test processes running at once (pytest-xdist, manage.py test --parallel) get keys of their own.

They once shared one key prefix: one process's flush deleted another's queued tasks, and its
drain ran another test's tasks against its own database.
"""

import pytest
from django.test import runner as django_runner

from django_threadmill.aliases import threadmill_backend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import flush
from django_threadmill.testing.isolation import own_key_prefixes, parallel_worker
from testproject.example.tasks import echo


def prefix() -> str:
    return threadmill_backend("default").settings.key_prefix


def test_outside_a_parallel_run_nothing_changes(
    monkeypatch: pytest.MonkeyPatch, key_prefix: str
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setattr(django_runner, "_worker_id", 0)
    assert parallel_worker() is None
    with own_key_prefixes():
        assert prefix() == key_prefix


@pytest.mark.parametrize(
    ("xdist", "django_worker", "name"),
    [("gw3", 0, "gw3"), (None, 2, "django2")],
    ids=["pytest-xdist", "django-parallel"],
)
def test_each_worker_gets_its_own_prefix(
    monkeypatch: pytest.MonkeyPatch,
    key_prefix: str,
    xdist: str | None,
    django_worker: int,
    name: str,
) -> None:
    if xdist is None:
        monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    else:
        monkeypatch.setenv("PYTEST_XDIST_WORKER", xdist)
    monkeypatch.setattr(django_runner, "_worker_id", django_worker)
    with own_key_prefixes():
        assert prefix() == f"{key_prefix}-{name}"
        with own_key_prefixes():  # entered twice (a fixture inside a mixin): suffixed once
            assert prefix() == f"{key_prefix}-{name}"
    assert prefix() == key_prefix


def test_one_workers_flush_leaves_anothers_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    with own_key_prefixes():
        queued = echo.enqueue(1)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw2")
    with own_key_prefixes():
        flush()
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    with own_key_prefixes():
        queued.refresh()
        assert queued.status == TaskResultStatus.READY
        flush()
