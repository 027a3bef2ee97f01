"""What a workflow is doing, read back from its hash and its steps' records."""

from contextlib import suppress
from dataclasses import dataclass, field

from ..aliases import threadmill_backend
from ..backend import ThreadmillTaskBackend
from ..compat import DEFAULT_TASK_BACKEND_ALIAS, TaskResult, TaskResultDoesNotExist
from ..compat import TaskResultStatus as Status
from ..exceptions import WorkflowDoesNotExist
from .plan import PlannedStep, step_task_id, stored_plan

STARTED = frozenset({Status.RUNNING, Status.SUCCESSFUL, Status.FAILED})


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowStep:
    """One step of a workflow: its fixed task id, and its result once it was enqueued."""

    index: int
    task_id: str
    task_path: str
    queue: str
    result: TaskResult | None  # None until it is enqueued, and for good when it is not run
    not_run: str  # why it will not run ("" while it may)

    @property
    def state(self) -> str:
        """The step's status, or WAITING (for the steps it takes its input from) or NOT_RUN."""
        if self.result is not None:
            return str(self.result.status)
        return "NOT_RUN" if self.not_run else "WAITING"


@dataclass(slots=True, kw_only=True)
class WorkflowResult:
    """A workflow's status and the results of its steps; ``refresh()`` reads them again."""

    id: str
    backend: str
    status: Status = Status.READY
    why: str = ""  # why it failed or was cancelled
    steps: list[WorkflowStep] = field(default_factory=list)

    @property
    def results(self) -> list[TaskResult | None]:
        """The steps' results in step order (None for a step not enqueued)."""
        return [step.result for step in self.steps]

    def refresh(self) -> None:
        """Read the workflow and its steps again."""
        fresh = read_workflow(threadmill_backend(self.backend), self.id)
        self.status, self.why, self.steps = fresh.status, fresh.why, fresh.steps

    def cancel(self, reason: str = "") -> bool:
        """Stop the workflow: nothing more is enqueued, and its steps still waiting in a
        queue are cancelled. Return False if it had ended already."""
        backend = threadmill_backend(self.backend)
        why = "cancelled" + (f": {reason}" if reason else "")
        status, _ = backend.broker.advance_workflow(self.id, None, "cancelled", why)
        self.refresh()
        for step in self.steps:
            if step.result is not None and step.result.status == Status.READY:
                backend.cancel(step.task_id, f"its workflow was {why}")
        self.refresh()
        return status == "open"


def get_workflow(workflow_id: str, backend: str = DEFAULT_TASK_BACKEND_ALIAS) -> WorkflowResult:
    """Return the workflow ``workflow_id`` of the ThreadmillTaskBackend ``backend``."""
    return read_workflow(threadmill_backend(backend), workflow_id)


def read_workflow(backend: ThreadmillTaskBackend, workflow_id: str) -> WorkflowResult:
    """Read a workflow's hash and the records of its enqueued steps."""
    fields = backend.broker.workflow_fields(workflow_id)
    if "plan" not in fields:
        raise WorkflowDoesNotExist(
            f"Backend {backend.alias!r} has no workflow {workflow_id!r}: it never did, or it "
            "ended more than result_ttl ago and expired."
        )
    steps = [_step(backend, workflow_id, planned, fields) for planned in stored_plan(fields)]
    return WorkflowResult(
        id=workflow_id,
        backend=backend.alias,
        status=_status(fields["status"], steps),
        why=fields.get("why", ""),
        steps=steps,
    )


def _step(
    backend: ThreadmillTaskBackend, workflow_id: str, planned: PlannedStep, fields: dict[str, str]
) -> WorkflowStep:
    task_id = step_task_id(workflow_id, planned)
    result = None
    if f"e:{planned.index}" in fields:
        with suppress(TaskResultDoesNotExist):  # due but not stored yet, or expired
            result = backend.get_result(task_id)
    return WorkflowStep(
        index=planned.index,
        task_id=task_id,
        task_path=planned.path,
        queue=planned.queue,
        result=result,
        not_run=fields.get(f"x:{planned.index}", ""),
    )


def _status(stored: str, steps: list[WorkflowStep]) -> Status:
    """SUCCESSFUL or FAILED once it ended; RUNNING once a step started; READY before."""
    if stored == "successful":
        return Status.SUCCESSFUL
    if stored in ("failed", "cancelled"):
        return Status.FAILED
    started = any(step.result is not None and step.result.status in STARTED for step in steps)
    return Status.RUNNING if started else Status.READY
