"""The workflow pages: the newest workflows of each backend, and one workflow's steps."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.http import Http404

from ..aliases import threadmill_backend
from ..broker.inspect.source import Source
from ..broker.types import stored_int
from ..exceptions import BrokerUnavailable, PayloadError, WorkflowDoesNotExist
from ..workflows.plan import Input
from ..workflows.result import planned_steps, workflow_from
from .display import when

LISTED = 50  # newest workflows shown per backend

STATUS_STATES = {  # a workflow's stored status -> the state class of its badge
    "open": "running",
    "successful": "successful",
    "failed": "failed",
    "cancelled": "failed",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowLine:
    """One workflow in the list."""

    id: str
    status: str  # as stored: open, successful, failed, cancelled ("" when it expired)
    steps: int
    succeeded: int
    created: datetime | None
    why: str

    @property
    def badge(self) -> str:
        """The state class of its status badge."""
        return STATUS_STATES.get(self.status, "")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowBlock:
    """The newest workflows of one backend, or why they could not be read."""

    alias: str
    lines: list[WorkflowLine]
    error: str = ""


def workflows_context(sources: list[Source]) -> dict[str, Any]:
    """The newest workflows of every backend, each line from one HMGET (one round trip)."""
    return {"blocks": [_block(source) for source in sources], "listed": LISTED}


def _block(source: Source) -> WorkflowBlock:
    try:
        ids = source.broker.recent_workflows(LISTED)
        summaries = source.broker.workflow_summaries(ids)
    except BrokerUnavailable as exc:
        return WorkflowBlock(alias=source.alias, lines=[], error=str(exc))
    lines = [
        WorkflowLine(
            id=workflow_id,
            status=summary.get("status", ""),
            steps=stored_int(summary.get("n")) or 0,
            succeeded=stored_int(summary.get("succeeded")) or 0,
            created=when(summary.get("created_ms")),
            why=summary.get("why", ""),
        )
        for workflow_id, summary in zip(ids, summaries, strict=True)
    ]
    return WorkflowBlock(alias=source.alias, lines=lines)


def workflow_context(alias: str, workflow_id: str) -> dict[str, Any]:
    """One workflow: its status and each step with its state, input and task link."""
    backend = threadmill_backend(alias)
    fields = backend.broker.workflow_fields(workflow_id)  # read once: the page agrees with itself
    try:
        planned = planned_steps(backend, workflow_id, fields)
    except (WorkflowDoesNotExist, PayloadError) as exc:  # PayloadError: its hash is damaged
        raise Http404(str(exc)) from exc
    workflow = workflow_from(backend, workflow_id, fields, planned)
    inputs = [_describe(step.input) for step in planned]
    return {
        "alias": alias,
        "workflow": workflow,
        "stored_status": fields.get("status", ""),
        "badge": STATUS_STATES.get(fields.get("status", ""), ""),
        "created": when(fields.get("created_ms")),
        "rows": [
            {"step": step, "input": inputs[step.index], "state": _state(step.state)}
            for step in workflow.steps
        ],
    }


def _state(state: str) -> str:
    return {"WAITING": "ready", "NOT_RUN": "failed"}.get(state, state.lower())


def _describe(source: Input) -> str:
    """Say where a step's first argument comes from."""
    if source is None:
        return "its own arguments only"
    if isinstance(source, int):
        return f"the value of step {source}"
    return f"the list of {len(source)} values: {_list(source)}"


def _list(source: list[Input]) -> str:
    return (
        "["
        + ", ".join(
            f"step {part}" if isinstance(part, int) else _list(part or []) for part in source
        )
        + "]"
    )
