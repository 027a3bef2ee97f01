"""What a workflow is doing, read back from its hash and its steps' records."""

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from asgiref.sync import sync_to_async

from ..aliases import threadmill_backend
from ..backend import ThreadmillTaskBackend
from ..broker.workflows import StoppedStep
from ..codec.ids import looked_up_id, queue_of, shown_id
from ..codec.results import MAX_ERROR_TEXT_CHARS, STATUS_OF_STATE, cut_to, record_status
from ..codec.text import utf8_text
from ..compat import DEFAULT_TASK_BACKEND_ALIAS, TaskResult
from ..compat import TaskResultStatus as Status
from ..enqueue.on_commit import stored_at_commit
from ..exceptions import PayloadError, WorkflowDoesNotExist
from .plan import PlannedStep, lacks, step_task_id, stored_plan
from .stopping import stop_steps

STARTED = frozenset({Status.RUNNING, Status.SUCCESSFUL, Status.FAILED})
WORKFLOW_ID = re.compile(r"[0-9a-f]{32}")  # as launch makes them (new_task_hex)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowStep:
    """One step of a workflow: its fixed task id, and its result once it was enqueued."""

    index: int
    task_id: str
    task_path: str
    queue: str
    result: TaskResult | None  # None until it is enqueued, for good when it is not run,
    # once its record expired (result_ttl) while the workflow stayed open, and when it
    # cannot be read (``unreadable``)
    not_run: str  # why it will not run ("" while it may)
    settled: str = ""  # how the workflow recorded its end: "successful", "failed", "cancelled"
    # Its task's status while it has a record (None before it is enqueued, once it expired,
    # and when its record holds no status: DAMAGED), read from the record: also when the
    # result cannot be built.
    task_status: Status | None = None
    unreadable: str = ""  # why its result cannot be built: its task path no longer imports
    # (renamed or deleted since), or its record's payload, result or state is damaged

    @property
    def state(self) -> str:
        """The step's status, or WAITING (for the steps it takes its input from), NOT_RUN,
        or DAMAGED (its record holds no status a script writes, ``unreadable`` says what).

        A step whose record expired reads as the workflow recorded its end, so a workflow
        open longer than ``result_ttl`` (a delayed step, a paused queue) does not go back.
        """
        if self.task_status is not None:
            return str(self.task_status)
        if self.unreadable:
            return "DAMAGED"
        if self.settled:
            return str(Status.SUCCESSFUL if self.settled == "successful" else Status.FAILED)
        return "NOT_RUN" if self.not_run else "WAITING"


@dataclass(slots=True, kw_only=True)
class WorkflowResult:
    """A workflow's status and the results of its steps; ``refresh()`` reads them again."""

    id: str
    backend: str
    status: Status = Status.READY
    why: str = ""  # why it failed or was cancelled
    steps: list[WorkflowStep] = field(default_factory=list)
    # Launched inside a transaction with enqueue_on_commit, and not read back since: nothing
    # is stored until the commit, so "not found" means "not yet", not "expired".
    _waits_for_commit: bool = field(default=False, repr=False)

    @property
    def results(self) -> list[TaskResult | None]:
        """The steps' results in step order (None for a step not enqueued)."""
        return [step.result for step in self.steps]

    def refresh(self) -> None:
        """Read the workflow and its steps again."""
        with self._read_back():
            self._take(get_workflow(self.id, self.backend))

    async def arefresh(self) -> None:
        """Async twin of ``refresh``, on the asyncio client (no thread hop), as
        ``TaskResult.arefresh`` is."""
        with self._read_back():
            self._take(await aget_workflow(self.id, self.backend))

    @contextmanager
    def _read_back(self) -> Iterator[None]:
        """Raise, for a workflow not found, that it waits for its commit, when it does."""
        try:
            yield
        except WorkflowDoesNotExist:
            self._refuse_before_commit("read back")
            raise

    def _take(self, fresh: "WorkflowResult") -> None:
        self.status, self.why, self.steps = fresh.status, fresh.why, fresh.steps
        self._waits_for_commit = False

    def cancel(self, reason: str = "") -> bool:
        """Stop the workflow: nothing more is enqueued, its steps still waiting in a queue
        are cancelled, and those a worker holds are noted so on their records (``stop_steps``).
        Return False if it had ended already (expired included).

        A workflow that had failed or succeeded is left as it is: its enqueued steps still run
        (docs/workflows.md, Semantics). One an earlier cancel ended has its waiting steps
        cancelled again, for that cancel's reason, which finishes a cancel interrupted after
        it recorded the workflow cancelled.
        """
        reason = utf8_text(reason, "WorkflowResult.cancel() reason")
        backend = threadmill_backend(self.backend)
        if not _can_name_one(self.id):
            return False  # Redis could not have been sent its id: it was never stored
        # Each step it leaves unrun keeps a copy (docs/workflows.md, Semantics): cut it.
        why = cut_to("cancelled" + (f": {reason}" if reason else ""), MAX_ERROR_TEXT_CHARS)
        # Its plan is read before the cancel, as it never changes: the hash expires result_ttl
        # after the cancel, which may be before a read after it, and its waiting steps ran.
        fields = backend.broker.workflow_fields(self.id)
        status, recorded, marked = backend.broker.cancel_workflow(self.id, why)
        if status == "missing":
            self._refuse_before_commit("cancelled")
            return False  # it ended more than result_ttl ago
        if marked:
            planned = planned_steps(backend, self.id, fields)
            _stop_enqueued(backend, self.id, [planned[index] for index in marked], recorded)
        try:
            self.refresh()
        except WorkflowDoesNotExist:
            if not recorded:
                raise
            # Expired already (result_ttl): it reads as the cancel recorded it.
            self.status, self.why, self._waits_for_commit = Status.FAILED, recorded, False
        return status == "open"

    async def acancel(self, reason: str = "") -> bool:
        """Async twin of ``cancel``: the same calls, in a thread of their own (a cancel
        stops every step it leaves unrun, a call per queue)."""
        return await sync_to_async(self.cancel, thread_sensitive=False)(reason)

    def _refuse_before_commit(self, what: str) -> None:
        """Raise if the workflow is not stored because its transaction has not committed."""
        if self._waits_for_commit:
            raise WorkflowDoesNotExist(stored_at_commit(f"Workflow {self.id!r}", "launched", what))


def _stop_enqueued(
    backend: ThreadmillTaskBackend, workflow_id: str, steps: list[PlannedStep], why: str
) -> None:
    """Stop the ``steps`` the cancelled workflow ``workflow_id`` enqueued (``stop_steps``), for
    ``why``, that of the cancel that ended it (this one, or an earlier one).

    The cancel's own call says which (``cancel_workflow``): cancel.lua leaves a step that
    ended as it is, so the steps' records need no read first, which cost a large group
    seconds (docs/workflows.md, What it costs).
    """
    stop_steps(
        backend,
        [
            (
                step_task_id(workflow_id, step),
                StoppedStep(workflow_id=workflow_id, step=step.index, why=why),
            )
            for step in steps
        ],
    )


def get_workflow(workflow_id: str, backend: str = DEFAULT_TASK_BACKEND_ALIAS) -> WorkflowResult:
    """Return the workflow ``workflow_id`` of the ThreadmillTaskBackend ``backend``."""
    return read_workflow(_backend_of(workflow_id, backend), workflow_id)


async def aget_workflow(
    workflow_id: str, backend: str = DEFAULT_TASK_BACKEND_ALIAS
) -> WorkflowResult:
    """Async twin of ``get_workflow``, on the asyncio client (no thread hop)."""
    source = _backend_of(workflow_id, backend)
    fields = await source.broker.aworkflow_fields(workflow_id)
    planned = planned_steps(source, workflow_id, fields)
    ids = enqueued_ids(workflow_id, fields, planned)
    reads = step_reads(source, ids, await source.broker.arecords_read(ids))
    return workflow_from(source, workflow_id, fields, planned, reads)


def _backend_of(workflow_id: str, backend: str) -> ThreadmillTaskBackend:
    """Return the ThreadmillTaskBackend ``backend``, to read ``workflow_id`` from: an id that
    cannot name a workflow (``looked_up_id``) raises as unknown without asking Redis."""
    source = threadmill_backend(backend)
    if not _can_name_one(workflow_id):
        raise no_such_workflow(source, workflow_id)
    return source


def _can_name_one(workflow_id: object) -> bool:
    """Tell whether ``workflow_id`` can name a stored workflow (``looked_up_id``); raise
    ``TypeError`` naming the fix when it is no str. ``refresh()`` and ``cancel()`` ask too:
    an id of bytes read as no workflow there, and a lone surrogate failed in the Redis client."""
    return looked_up_id(workflow_id, "workflow id", "WorkflowResult.id") is not None


def read_workflow(backend: ThreadmillTaskBackend, workflow_id: str) -> WorkflowResult:
    """Read a workflow's hash and the records of its enqueued steps."""
    fields = backend.broker.workflow_fields(workflow_id)
    planned = planned_steps(backend, workflow_id, fields)
    ids = enqueued_ids(workflow_id, fields, planned)
    reads = step_reads(backend, ids, backend.broker.records_read(ids))
    return workflow_from(backend, workflow_id, fields, planned, reads)


def no_such_workflow(backend: ThreadmillTaskBackend, workflow_id: str) -> WorkflowDoesNotExist:
    return WorkflowDoesNotExist(
        f"Backend {backend.alias!r} has no workflow {shown_id(workflow_id)}: "
        f"{_why_none(workflow_id)}"
    )


def _why_none(workflow_id: str) -> str:
    """Why no workflow has ``workflow_id``: an id of the shape launch gives one (``new_task_hex``)
    names one that expired, or never was; any other id is given in error."""
    if WORKFLOW_ID.fullmatch(workflow_id):
        return (
            "it never did, it ended more than result_ttl ago and expired, or its launch did not "
            "store its first steps (interrupted, or Redis away) and it expired."
        )
    if queue_of(workflow_id):
        return (
            "that is a task id, read with get_result(). A workflow's id is 32 hex digits, "
            "its WorkflowResult.id: pass that."
        )
    return "a workflow's id is 32 hex digits, its WorkflowResult.id: pass that."


def planned_steps(
    backend: ThreadmillTaskBackend, workflow_id: str, fields: dict[str, str]
) -> list[PlannedStep]:
    """The steps of the workflow whose hash reads ``fields``: WorkflowDoesNotExist when there
    is none, PayloadError when the hash is damaged."""
    if "n" not in fields:
        raise no_such_workflow(backend, workflow_id)
    if "status" not in fields:  # every launch writes it with the step count
        raise lacks(workflow_id, "status")
    return stored_plan(workflow_id, fields)


@dataclass(frozen=True, slots=True)
class StepRead:
    """What was read of an enqueued step's record: its task's status, and its result or why
    it cannot be built."""

    status: Status | None  # None: its key holds no record, or the record no status a script
    # writes (``unreadable`` says what)
    result: TaskResult | None = None
    unreadable: str = ""


def read_step(backend: ThreadmillTaskBackend, task_id: str, record: dict[str, str]) -> StepRead:
    """Build a step's result from its record, or say why it cannot be built. A state no
    script writes (written or deleted by hand) reads as no status, not as READY: the step
    reads DAMAGED, its ``unreadable`` the ``PayloadError`` that ``get_result`` raises."""
    status = record_status(record) if record.get("state") in STATUS_OF_STATE else None
    try:
        return StepRead(status, backend.pipeline.result_from(task_id, record))
    except PayloadError as exc:  # the step still reads, as its task's admin page does
        return StepRead(status, unreadable=str(exc))


def step_reads(
    backend: ThreadmillTaskBackend,
    task_ids: list[str],
    records: list[dict[str, str] | PayloadError | None],
) -> dict[str, StepRead]:
    """What was read of the steps ``task_ids``, whose records are ``records`` (None: none; a
    ``PayloadError``: one that cannot be read, its key not a hash or its bytes not UTF-8)."""
    found = zip(task_ids, records, strict=True)
    return {
        task_id: StepRead(None, unreadable=str(record))
        if isinstance(record, PayloadError)
        else read_step(backend, task_id, record)
        for task_id, record in found
        if record
    }


def enqueued_steps(fields: dict[str, str], planned: list[PlannedStep]) -> list[PlannedStep]:
    """Those of ``planned`` the workflow whose hash reads ``fields`` enqueued (or found due)."""
    return [step for step in planned if f"e:{step.index}" in fields]


def enqueued_ids(workflow_id: str, fields: dict[str, str], planned: list[PlannedStep]) -> list[str]:
    """The task ids of those of ``planned`` the workflow whose hash reads ``fields`` enqueued."""
    return [step_task_id(workflow_id, step) for step in enqueued_steps(fields, planned)]


def workflow_from(
    backend: ThreadmillTaskBackend,
    workflow_id: str,
    fields: dict[str, str],
    planned: list[PlannedStep],
    reads: dict[str, StepRead],
) -> WorkflowResult:
    """Build the workflow whose hash reads ``fields`` and holds the steps ``planned``, from
    ``reads``: what was read of its enqueued steps' records (``step_reads``; the admin's page
    reads less: docs/admin.md, Cost per page view)."""
    steps = [_step(workflow_id, step, fields, reads) for step in planned]
    return WorkflowResult(
        id=workflow_id,
        backend=backend.alias,
        status=_status(fields["status"], steps),
        why=fields.get("why", ""),
        steps=steps,
    )


def launched(
    backend: ThreadmillTaskBackend,
    workflow_id: str,
    planned: list[PlannedStep],
    stored: list[TaskResult],
) -> WorkflowResult:
    """The result of a workflow whose launch just stored its first steps, whose READY results
    are ``stored``: built from what the launch knows, as a lone task's ``enqueue()`` returns
    the result it stored, not read back (``refresh()`` reads it)."""
    reads = {result.id: StepRead(result.status, result) for result in stored}
    return workflow_from(backend, workflow_id, {"status": "open"}, planned, reads)


def waiting_for_commit(
    backend: ThreadmillTaskBackend, workflow_id: str, planned: list[PlannedStep]
) -> WorkflowResult:
    """The result of a workflow whose launch waits for a transaction's commit: nothing is
    stored yet, so every step waits (``refresh()`` finds it once the commit wrote it)."""
    steps = [_step(workflow_id, step, {}, {}) for step in planned]
    return WorkflowResult(
        id=workflow_id, backend=backend.alias, steps=steps, _waits_for_commit=True
    )


def _step(
    workflow_id: str, planned: PlannedStep, fields: dict[str, str], reads: dict[str, StepRead]
) -> WorkflowStep:
    task_id = step_task_id(workflow_id, planned)
    read = reads.get(task_id)  # None: not enqueued, or due and not stored yet, or expired
    return WorkflowStep(
        index=planned.index,
        task_id=task_id,
        task_path=planned.path,
        queue=planned.queue,
        result=None if read is None else read.result,
        not_run=fields.get(f"x:{planned.index}", ""),
        settled=fields.get(f"s:{planned.index}", ""),
        task_status=None if read is None else read.status,
        unreadable="" if read is None else read.unreadable,
    )


def _status(stored: str, steps: list[WorkflowStep]) -> Status:
    """SUCCESSFUL or FAILED once it ended; RUNNING once a step started; READY before."""
    if stored == "successful":
        return Status.SUCCESSFUL
    if stored in ("failed", "cancelled"):
        return Status.FAILED
    started = any(step.settled or _started(step) for step in steps)
    return Status.RUNNING if started else Status.READY


def _started(step: WorkflowStep) -> bool:
    """Tell whether an attempt of ``step`` started: it runs or ended, or it waits for a retry.

    A task waiting for its retry reads READY (docs/lifecycle.md, Retries), and its workflow
    went back from RUNNING to READY meanwhile: its errors say it ran.
    """
    return step.task_status in STARTED or (step.result is not None and bool(step.result.errors))
