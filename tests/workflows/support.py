"""What the workflow tests check of a workflow, shared."""

from django_threadmill.compat import TaskResult, TaskResultStatus
from django_threadmill.workflows import WorkflowResult


def cancelled_before_it_ran(flow: WorkflowResult, index: int, why: str) -> TaskResult:
    """Read ``flow`` again; check that its step ``index`` was stored and ended cancelled before
    it ran, for ``why``; return that step's result."""
    flow.refresh()
    result = flow.results[index]
    assert result is not None
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[-1].traceback.strip().endswith(f"Cancelled before it ran: {why}")
    return result
