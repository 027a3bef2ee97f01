"""The workflow pages: the newest workflows of each backend, and one workflow's steps."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.paginator import Paginator
from django.http import Http404

from ..aliases import threadmill_backend
from ..backend import ThreadmillTaskBackend
from ..broker.inspect.source import Source
from ..broker.types import stored_int
from ..codec.jsoncodec import dumps
from ..codec.results import record_status
from ..compat import TaskResultStatus as Status
from ..exceptions import BrokerUnavailable, PayloadError, WorkflowDoesNotExist
from ..workflows.plan import Input, PlannedStep, step_task_id
from ..workflows.result import (
    STARTED,
    StepRead,
    enqueued_ids,
    planned_steps,
    read_step,
    workflow_from,
)
from .display import page_address, when

LISTED = 50  # newest workflows shown per backend
WORKFLOW_URL_NAME = "admin:django_threadmill_task_workflow"
STEPS_PER_PAGE = 200  # steps one page of a workflow shows; a group may hold thousands
# The most bytes of a step's payload, and of its result, the page reads to tell whether they
# can be read: each step's whole record was read, 200 MB for 200 steps returning 1 MB each.
CHECKED_BYTES = 16 * 1024
INPUTS_NAMED = 5  # steps a step's input list names before it says how many more there are

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
    url: str  # its page; "" when it expired, or for an id written by hand no URL names

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
            url=page_address(WORKFLOW_URL_NAME, source.alias, workflow_id)
            if summary.get("status")
            else "",
        )
        for workflow_id, summary in zip(ids, summaries, strict=True)
    ]
    return WorkflowBlock(alias=source.alias, lines=lines)


def workflow_context(source: Source, workflow_id: str, page_number: str | None) -> dict[str, Any]:
    """One page of a workflow: its status, and ``STEPS_PER_PAGE`` steps with their state, input
    and task link. Only the shown steps' records are read: a group of 10,000 steps read whole
    made a page of 3 MB."""
    backend = threadmill_backend(source.alias)
    fields = backend.broker.workflow_fields(workflow_id)  # read once: the page agrees with itself
    try:
        planned = planned_steps(backend, workflow_id, fields)
    except (WorkflowDoesNotExist, PayloadError) as exc:  # PayloadError: its hash is damaged
        raise Http404(str(exc)) from exc
    page = Paginator(planned, STEPS_PER_PAGE).get_page(page_number)
    shown = list(page.object_list)
    reads = _step_reads(source, backend, workflow_id, fields, shown)
    workflow = workflow_from(backend, workflow_id, fields, shown, reads)
    status = workflow.status  # READY: none of the steps shown started, but others may have
    if status is Status.READY and _started(source, workflow_id, fields, planned):
        status = Status.RUNNING
    return {
        "alias": source.alias,
        "workflow": workflow,
        "status": status,
        "stored_status": fields.get("status", ""),
        "badge": STATUS_STATES.get(fields.get("status", ""), ""),
        "created": when(fields.get("created_ms")),
        "page": page if page.paginator.num_pages > 1 else None,
        "rows": [
            {"step": step, "input": _describe(plan.input), "state": _state(step.state)}
            for step, plan in zip(workflow.steps, shown, strict=True)
        ],
    }


def _step_reads(
    source: Source,
    backend: ThreadmillTaskBackend,
    workflow_id: str,
    fields: dict[str, str],
    shown: list[PlannedStep],
) -> dict[str, StepRead]:
    """Read what the page shows of the enqueued steps ``shown``: each one's state, and why its
    result cannot be built, checked on its payload and result where each is at most
    CHECKED_BYTES long. A longer one is not read (docs/admin.md, Cost per page view): the
    task path of a payload is checked as the plan names it, a result is not checked."""
    paths = {step_task_id(workflow_id, step): step.path for step in shown}
    ids = enqueued_ids(workflow_id, fields, shown)
    reads = {}
    for task_id, found in zip(ids, source.inspector.step_records(ids, CHECKED_BYTES), strict=True):
        if found is None:
            continue
        if found.damaged:
            reads[task_id] = StepRead(None, unreadable=found.damaged)
            continue
        record = dict(found.values)
        if "payload" in found.unread:  # its path as the plan names it, checked that it imports
            record["payload"] = dumps({"path": paths[task_id]})
        if "result" in found.unread:  # there, unchecked: not a success without its result
            record["result"] = "null"
        read = read_step(backend, task_id, record)
        reads[task_id] = StepRead(read.status, unreadable=read.unreadable)  # no result: unread
    return reads


def _started(
    source: Source, workflow_id: str, fields: dict[str, str], planned: list[PlannedStep]
) -> bool:
    """Whether any step of the workflow started, as ``get_workflow()`` reads it: settled, or
    its record's state says so, or its errors (it waits for a retry): those two fields are
    read, not the whole record."""
    if any(fields.get(f"s:{step.index}") for step in planned):
        return True
    enqueued = [step_task_id(workflow_id, step) for step in planned if f"e:{step.index}" in fields]
    return any(
        found is not None
        and (
            record_status({"state": found["state"] or ""}) in STARTED
            or bool(stored_int(found["nerrors"]))
        )
        for found in source.inspector.probe(enqueued, ("state", "nerrors"))
    )


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
    """Name the steps of an input list, the first ``INPUTS_NAMED`` of a long one."""
    named = [
        f"step {part}" if isinstance(part, int) else _list(part or [])
        for part in source[:INPUTS_NAMED]
    ]
    if len(source) > INPUTS_NAMED:
        named.append(f"… {len(source) - INPUTS_NAMED:,} more")
    return "[" + ", ".join(named) + "]"
