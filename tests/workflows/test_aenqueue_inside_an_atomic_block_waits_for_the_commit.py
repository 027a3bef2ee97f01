"""With enqueue_on_commit, ``await flow.aenqueue()`` inside a transaction entered in async code
waits for its commit, as a lone task's ``aenqueue`` does (docs/enqueue.md, Enqueue after
commit): launched in a worker thread, whose connection holds no transaction, it was stored at
once and kept on a rollback."""

import asyncio

import pytest
from django.db import connection, transaction

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import WorkflowDoesNotExist
from django_threadmill.workflows import WorkflowResult, chain, get_workflow, step

from .tasks import add, number

pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"enqueue_on_commit": True}


def stored(flow: WorkflowResult) -> bool:
    try:
        get_workflow(flow.id)
    except WorkflowDoesNotExist:
        return False
    return True


def test_a_workflow_aenqueued_inside_an_atomic_block_waits_for_its_commit(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Django refuses atomic() in async code unless told it is safe.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    async def in_transactions() -> tuple[WorkflowResult, WorkflowResult, bool]:
        try:
            with transaction.atomic():
                kept = await chain(step(number, 1), step(add, 1)).aenqueue()
                kept_before_the_commit = stored(kept)
                with transaction.atomic():
                    dropped = await chain(step(number, 2), step(add, 2)).aenqueue()
                    transaction.set_rollback(True)
            return kept, dropped, kept_before_the_commit
        finally:
            # The event loop's context opened a connection of its own, and Django ignores
            # close() on an in-memory SQLite database: close the driver's connection, or
            # Python 3.13 warns (an error here) when it is collected open.
            if connection.connection is not None:
                connection.connection.close()

    kept, dropped, kept_before_the_commit = asyncio.run(in_transactions())
    assert not kept_before_the_commit
    assert [s.state for s in get_workflow(kept.id).steps] == ["READY", "WAITING"]
    assert not stored(dropped)
