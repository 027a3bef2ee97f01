"""With enqueue_on_commit and autocommit turned off outside ``atomic()`` (manual transaction
management), an enqueue is refused naming the fix, and nothing is stored.

Django runs no on_commit callbacks there, and its own error, "on_commit() cannot be used in
manual transaction management", named a call the project never made and no fix.
"""

import re
from collections.abc import Callable, Iterator

import pytest
import redis
from django.db import transaction

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResult
from testproject.example.tasks import echo


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"enqueue_on_commit": True}


@pytest.fixture
def autocommit_off(transactional_db: None) -> Iterator[None]:
    transaction.set_autocommit(False)
    try:
        yield
    finally:
        transaction.rollback()
        transaction.set_autocommit(True)


def enqueue_one(backend: ThreadmillTaskBackend) -> list[TaskResult]:
    return [echo.enqueue("lost")]


def enqueue_many(backend: ThreadmillTaskBackend) -> list[TaskResult]:
    return backend.enqueue_many(echo, [(("lost",), {})] * 2)


@pytest.mark.usefixtures("autocommit_off")
@pytest.mark.parametrize(
    ("enqueue", "what"),
    [
        (enqueue_one, "Task 'testproject.example.tasks.echo' waits"),
        (enqueue_many, "2 tasks ('testproject.example.tasks.echo') wait"),
    ],
)
def test_an_enqueue_on_commit_with_autocommit_off_names_the_fix(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    key_prefix: str,
    enqueue: Callable[[ThreadmillTaskBackend], list[TaskResult]],
    what: str,
) -> None:
    message = (
        f"{what} for the commit of database 'default' (enqueue_on_commit), but that connection "
        "has autocommit off outside atomic() (manual transaction management), where Django runs "
        "no on_commit callbacks; nothing was stored. Enqueue inside transaction.atomic(), turn "
        "autocommit back on, or write at once with task.using(enqueue_on_commit=False)."
    )
    with pytest.raises(transaction.TransactionManagementError, match=f"^{re.escape(message)}$"):
        enqueue(backend)
    assert not list(redis_client.scan_iter(f"{key_prefix}:*"))


@pytest.mark.usefixtures("transactional_db")
def test_a_write_at_once_is_stored_with_autocommit_off(
    backend: ThreadmillTaskBackend, autocommit_off: None
) -> None:
    result = echo.using(enqueue_on_commit=False).enqueue("now")
    assert backend.get_result(result.id).args == ["now"]
