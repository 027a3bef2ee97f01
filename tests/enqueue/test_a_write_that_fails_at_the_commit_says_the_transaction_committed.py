"""With enqueue_on_commit, a write Redis refuses at the commit is raised from the exit of
``atomic()``, after the database committed (docs/enqueue.md, Enqueue after commit).

An error leaving ``atomic()`` reads as a rollback, and Django runs none of the transaction's
later on_commit callbacks after one that raised: the error said only "nothing was written", so
a caller took the saved rows for rolled back, and the transaction's later enqueues were lost
unsaid. It now carries a note saying both.
"""

import pytest
import redis
from django.contrib.auth.models import User
from django.db import transaction
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultDoesNotExist
from django_threadmill.exceptions import BrokerUnavailable
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.servers.redis_server import free_port

pytestmark = pytest.mark.usefixtures("transactional_db")

ECHO = "testproject.example.tasks.echo"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"enqueue_on_commit": True}


def note_for(what: str) -> str:
    return (
        f"Raised at the commit of database 'default', which went through: the transaction's "
        f"changes are saved, and this enqueue of {what}, made with enqueue_on_commit, failed as "
        "said above. Django ran none of the transaction's later on_commit callbacks, so its "
        "enqueues after this one were not stored either: enqueue them again once the cause "
        "above is fixed."
    )


def test_redis_down_at_the_commit_names_the_committed_transaction_and_the_lost_enqueues(
    key_prefix: str,
) -> None:
    location = f"redis://127.0.0.1:{free_port()}/0"
    later: list[str] = []

    def save_and_enqueue() -> None:
        with transaction.atomic():
            User.objects.create(username="ada")
            echo.enqueue("first")  # nothing reaches Redis before the commit
            echo.enqueue("second")
            transaction.on_commit(lambda: later.append("ran"))

    setting = tasks_setting(location, key_prefix, enqueue_on_commit=True, socket_connect_timeout=2)
    with (
        override_settings(TASKS=setting),
        pytest.raises(
            BrokerUnavailable, match=r"is unreachable .*; nothing was written\."
        ) as raised,
    ):
        save_and_enqueue()
    assert User.objects.filter(username="ada").exists()  # committed, whatever the error
    assert later == []
    assert raised.value.__notes__ == [note_for(f"task {ECHO!r}")]


def test_a_refused_queue_at_the_commit_keeps_the_later_enqueue_from_being_stored(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    redis_client.set(backend.broker.queue_keys("emails").ready, "not a zset")
    enqueued = []

    def enqueue_both() -> None:
        with transaction.atomic():
            backend.enqueue_many(echo.using(queue_name="emails"), [(("a",), {}), (("b",), {})])
            enqueued.append(echo.enqueue("on a queue that works"))

    with pytest.raises(BrokerUnavailable, match="holds a value of the wrong kind") as raised:
        enqueue_both()
    with pytest.raises(TaskResultDoesNotExist):
        backend.get_result(enqueued[0].id)
    assert raised.value.__notes__ == [note_for(f"2 tasks ({ECHO!r})")]
