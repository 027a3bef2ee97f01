"""``WorkflowResult.arefresh()`` and ``acancel()`` do what ``refresh()`` and ``cancel()`` do, from
async code, as Django's ``TaskResult.arefresh()`` does for a task: an async view had to wrap
them in ``sync_to_async`` itself, or build the workflow again with ``aget_workflow``.
"""

import asyncio

from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from django_threadmill.workflows import WorkflowResult, chain, step

from .tasks import add, number


def states(flow: WorkflowResult) -> tuple[object, ...]:
    return flow.status, flow.why, [(s.task_id, s.task_status, s.not_run) for s in flow.steps]


def test_arefresh_reads_what_refresh_reads() -> None:
    flow = chain(step(number, 1), step(add, 2)).enqueue()
    drain()
    read_async = WorkflowResult(id=flow.id, backend=flow.backend)

    asyncio.run(read_async.arefresh())
    flow.refresh()

    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert states(read_async) == states(flow)
    assert [r.return_value for r in read_async.results if r is not None] == [1, 3]


def test_acancel_cancels_as_cancel_does() -> None:
    by_sync = chain(step(number, 1), step(add, 2)).enqueue()
    by_async = chain(step(number, 1), step(add, 2)).enqueue()

    cancelled = (
        by_sync.cancel("no longer wanted"),
        asyncio.run(by_async.acancel("no longer wanted")),
    )
    again = asyncio.run(by_async.acancel("again"))

    assert cancelled == (True, True)
    assert again is False
    assert (
        states(by_async)[:2]
        == states(by_sync)[:2]
        == (
            TaskResultStatus.FAILED,
            "cancelled: no longer wanted",
        )
    )
    assert [s.task_status for s in by_async.steps] == [s.task_status for s in by_sync.steps]
