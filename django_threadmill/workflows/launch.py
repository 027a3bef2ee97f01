"""Enqueue a workflow: check every step, store the workflow, enqueue the steps that wait for
nothing. The rest is enqueued by drainers as steps end (advance.py)."""

from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import partial

from asgiref.sync import sync_to_async

from ..aliases import threadmill_backend
from ..backend import ThreadmillTaskBackend
from ..broker import Enqueued, Guard, GuardKind, NewTask
from ..broker.workflows import LAUNCH_TTL_MS, StoppedStep
from ..codec.ids import new_task_hex, step_marker
from ..codec.results import MAX_ERROR_TEXT_CHARS, cut_to
from ..compat import InvalidTask, Task, TaskResult
from ..enqueue.announce import announce_all, announce_guarded
from ..enqueue.on_commit import defer_to_commit, in_transaction
from ..enqueue.pipeline import Announcer
from ..enqueue.prepare import encode_call
from ..exceptions import BrokerUnavailable, PartlyEnqueued, WorkflowDoesNotExist
from ..observability.tracing import stored_carrier, traced_launch
from .plan import (
    Plan,
    Plannable,
    PlannedStep,
    plan,
    step_task_id,
    workflow_fields,
)
from .result import WorkflowResult, launched, read_workflow, waiting_for_commit
from .stopping import stop_steps

type PreparedStep = tuple[NewTask, TaskResult]  # a step's stored form, and its result
# Steps of one queue a drainer stores (and marks) per script call: at most about 50 ms of
# Redis at 1,000 (docs/workflows.md, What it costs).
STORE_BATCH = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredSteps:
    """What ``store_steps`` did."""

    refused: BrokerUnavailable | None  # the error of the first queue that refused its steps
    announced: list[TaskResult]  # the READY results of the steps this call stored
    stopped: bool  # some were recorded as not run meanwhile, and cancelled (mark_enqueued)


@traced_launch
def launch(root: Plannable) -> WorkflowResult:
    """Store the workflow of ``root`` and enqueue its first steps; return its result.

    Every step is checked (its task, found at its path, its backend, its own arguments as
    JSON) before anything is stored. The workflow's hash is written before any step is
    enqueued, so a step that ends at once finds it. With ``enqueue_on_commit`` (OPTIONS, or a
    first step's task), inside a transaction all of it waits for the commit, and the result
    says READY until then. A task_enqueued receiver's error is raised from here, but logged
    at the commit, as a lone task's is: raised there, it kept the transaction's later
    on_commit callbacks (its other enqueues) from running (docs/enqueue.md, Enqueue after
    commit).
    """
    planned = plan(root)
    backend = _backend_of(planned.tasks)
    workflow_id = new_task_hex()
    first: dict[str, list[PreparedStep]] = {}
    entry_tasks: list[Task] = []
    entry_results: list[TaskResult] = []
    for step, task in zip(planned.steps, planned.tasks, strict=True):
        prepared = _checked_step(backend, workflow_id, step, task)
        _keep_normalised(planned, step, prepared[1])
        if step.input is None:
            first.setdefault(step.queue, []).append(prepared)
            entry_tasks.append(task)
            entry_results.append(prepared[1])
    # The launch span's context (traced_launch): the drainers enqueue the later steps in it.
    fields = workflow_fields(planned.steps, trace=stored_carrier())
    write = partial(_store, backend, workflow_id, planned, fields, first)
    waits = any(map(backend.pipeline.waits_for_commit, entry_tasks))
    if waits and defer_to_commit(partial(write, announce_guarded), entry_results):
        return waiting_for_commit(backend, workflow_id, planned.steps)
    stored = write(announce_all)
    if stored.stopped or len(stored.announced) < len(entry_tasks):
        return read_workflow(backend, workflow_id)  # it ended meanwhile: say how
    # What the launch stored is what it returns, as a lone task's enqueue() does: reading back
    # every step cost a large group as much as storing it (docs/workflows.md, What it costs).
    return launched(backend, workflow_id, planned.steps, stored.announced)


def _store(
    backend: ThreadmillTaskBackend,
    workflow_id: str,
    planned: Plan,
    fields: dict[str, str | int],
    first: dict[str, list[PreparedStep]],
    announce_stored: Announcer,
) -> StoredSteps:
    """Write the workflow's hash (``fields``), then its first steps, marked enqueued and
    announced by ``announce_stored``; return what the store did.

    A queue that refuses its steps while others are stored, or a store whose round trip was
    lost (its steps may be stored or not), would leave a workflow open for good, since only
    the launch stores its first steps, or running although ``enqueue()`` raised: it is
    cancelled, with the steps that were stored. Should the cancel fail too, the hash expires
    unless a first step was stored (docs/workflows.md, Semantics).
    """
    backend.broker.create_workflow(workflow_id, fields)
    first_steps = [s for s in planned.steps if s.input is None]
    try:
        stored = store_steps(
            backend, workflow_id, first, first_steps, announce_stored=announce_stored
        )
    except BrokerUnavailable as lost:  # a dropped connection (MaybeApplied), Redis gone
        refused = lost
    else:
        if stored.refused is None:
            return stored
        refused = stored.refused
    why = str(refused.__cause__ if isinstance(refused, PartlyEnqueued) else refused)
    try:
        read_workflow(backend, workflow_id).cancel(
            f"not enqueued whole: {cut_to(why, MAX_ERROR_TEXT_CHARS)}"
        )
    # The store's own error says what was written; a hash gone (its TTL outlived) was not.
    except (BrokerUnavailable, WorkflowDoesNotExist) as gone:
        refused.add_note(
            f"Workflow {workflow_id!r} is not cancelled: its cancel failed too ({gone}). The "
            "steps stored run; if none was, the workflow expires within "
            f"{LAUNCH_TTL_MS // 1000}s."
        )
        raise refused from refused.__cause__
    raise BrokerUnavailable(
        f"Workflow {workflow_id!r} was not enqueued whole: {why} It is cancelled, with any "
        "step that was stored; enqueue the workflow again."
    ) from refused


def _checked_step(
    backend: ThreadmillTaskBackend, workflow_id: str, step: PlannedStep, task: Task
) -> PreparedStep:
    """Encode ``step`` with the arguments given to ``step()`` (``step_task``), its error naming
    the step: a task may be several steps of one workflow, and the message's ``args[0]``
    counts those arguments, not the input the step also gets when it runs."""
    try:
        return step_task(backend, workflow_id, step, task, step.args)
    except (TypeError, ValueError) as exc:  # unstorable, or too large (enqueue/prepare.py)
        kind = TypeError if isinstance(exc, TypeError) else ValueError
        raise kind(
            f"Step {step.index} of this workflow cannot be enqueued (args and kwargs count "
            f"the arguments given to its step()): {exc}"
        ) from exc


def _keep_normalised(planned: Plan, step: PlannedStep, result: TaskResult) -> None:
    """Keep ``step``'s arguments in the plan as its task will get them: Django normalises
    them (bytes to str, any sequence to a list, any mapping to a dict), and only that form
    is JSON the workflow's hash can store."""
    planned.steps[step.index] = replace(step, args=result.args, kwargs=result.kwargs)


async def alaunch(root: Plannable) -> WorkflowResult:
    """Async twin of ``launch``, run in a worker thread (a workflow is several round trips).

    Run here instead when this code holds a transaction (``atomic()`` entered in async code,
    under DJANGO_ALLOW_ASYNC_UNSAFE), so that with ``enqueue_on_commit`` it waits for that
    commit, as a lone task's ``aenqueue`` does (docs/enqueue.md, Enqueue after commit): a
    worker thread has a connection of its own, which holds none.
    """
    if in_transaction():
        return launch(root)
    return await sync_to_async(launch, thread_sensitive=False)(root)


def step_task(
    backend: ThreadmillTaskBackend,
    workflow_id: str,
    step: PlannedStep,
    task: Task,
    args: list[object],
) -> PreparedStep:
    """Encode one call of a step under its fixed id, marked as that workflow's step; return
    it with the result task_enqueued announces once it is stored."""
    return encode_call(
        task,
        args,
        step.kwargs,
        broker=backend.broker,
        task_id=step_task_id(workflow_id, step),
        guard=Guard(kind=GuardKind.STEP, name=step_marker(workflow_id, step.index), value_ms=0),
    )


def enqueue_steps(
    backend: ThreadmillTaskBackend,
    workflow_id: str,
    groups: dict[str, list[PreparedStep]],
    steps: list[PlannedStep],
) -> None:
    """``store_steps``, raising the error of the first queue that refused its steps: a
    drainer keeps its outbox entry, and its next look stores the steps not marked."""
    refused = store_steps(backend, workflow_id, groups, steps, batch=STORE_BATCH).refused
    if refused is not None:
        raise refused


def store_steps(
    backend: ThreadmillTaskBackend,
    workflow_id: str,
    groups: dict[str, list[PreparedStep]],
    steps: list[PlannedStep],
    *,
    batch: int | None = None,
    announce_stored: Announcer = announce_all,
) -> StoredSteps:
    """Store the encoded ``steps``, grouped by queue (all queues in one round trip), mark
    those in Redis enqueued, then send task_enqueued for those this call stored; say what it
    did.

    A queue's steps are stored by atomic calls (per shard) of at most ``batch`` steps, each
    marked before the next (None: one call for all of them). A launch stores whole: a launch
    killed between two calls would leave its workflow open for good with the rest never
    stored, since only a launch stores its first steps (docs/workflows.md, A launch that was
    interrupted). A drainer stores in batches: its outbox entry stays until every step is
    stored, and its next look stores the rest. So a repeated advance (a drainer that died
    before taking its outbox entry out, or two drainers at once) finds them all stored and
    announces none of them: each step is announced once, by the call that stored it. A call
    that stored in part (a sharded queue's ``PartlyEnqueued``, or a queue refused after its
    first calls) marks and announces the steps written; the next advance stores the rest.
    Receivers hear of steps the workflow already counts as enqueued, and one that raises keeps
    no other step from being announced: its error is raised once every step is
    (``announce_stored``: ``announce_guarded`` at a commit logs it instead), or logged when a
    queue refused its steps.
    """
    by_id = {step_task_id(workflow_id, step): step for step in steps}
    refused: BrokerUnavailable | None = None
    stored: list[TaskResult] = []
    stopped = False
    try:
        for chunk in _batches(groups, batch):
            outcomes = backend.broker.enqueue_groups(
                {queue: [new for new, _ in prepared] for queue, prepared in chunk.items()}
            )
            refused = refused or next(
                (o for o in outcomes if isinstance(o, BrokerUnavailable)), None
            )
            in_redis: set[str] = set()
            for prepared, outcome in zip(chunk.values(), outcomes, strict=True):
                there, new = _written(prepared, outcome)
                in_redis |= there
                stored += new
            marked = sorted((by_id[i] for i in in_redis if i in by_id), key=lambda s: s.index)
            if mark_enqueued(backend, workflow_id, marked):
                stopped = True
                break  # the workflow ended: the steps left are recorded as not run
    except BaseException:
        # Those stored and marked before a later call failed are not due again: announced
        # now or never.
        announce_guarded(backend.pipeline.sender, stored)
        raise
    if refused is None:
        announce_stored(backend.pipeline.sender, stored)
    else:  # docs/enqueue.md, Bulk enqueue: the refusal says what was not written
        announce_guarded(backend.pipeline.sender, stored)
    return StoredSteps(refused=refused, announced=stored, stopped=stopped)


def _batches(
    groups: dict[str, list[PreparedStep]], batch: int | None
) -> Iterator[dict[str, list[PreparedStep]]]:
    """Split ``groups`` into rounds of at most ``batch`` steps per queue (None: one round):
    Redis serves no other client while an enqueue.lua call runs, and 30,000 steps held it for
    half a second (docs/workflows.md, What it costs)."""
    if batch is None:
        yield groups
        return
    longest = max(map(len, groups.values()), default=0)
    for start in range(0, longest, batch):
        chunk = {q: prepared[start : start + batch] for q, prepared in groups.items()}
        yield {queue: prepared for queue, prepared in chunk.items() if prepared}


def _written(
    prepared: list[PreparedStep], outcome: Enqueued | BrokerUnavailable
) -> tuple[set[str], list[TaskResult]]:
    """Return the ids of ``prepared`` that are in Redis after the call whose ``outcome``
    this is, and the results of those it stored: all when its queue's call stored them all,
    none when it found some stored (a repeat does not say which are new). Of a sharded queue
    stored in part, those of the shards that wrote, which hold a step stored before only when
    no call marked it (its drainer died, or its shard may have been written): none announced
    it, short of two drainers repeating one advance at once. A call that may have been applied
    counts as none."""
    if isinstance(outcome, Enqueued):
        fresh = outcome.stored == len(prepared)
        return {new.id for new, _ in prepared}, [r for _, r in prepared] if fresh else []
    if isinstance(outcome, PartlyEnqueued):  # a step is never a unique duplicate
        return set(outcome.written), [r for n, r in prepared if n.id in outcome.written]
    return set(), []


def mark_enqueued(
    backend: ThreadmillTaskBackend, workflow_id: str, steps: list[PlannedStep]
) -> bool:
    """Mark the stored ``steps`` enqueued; cancel those the workflow recorded as not run, and
    tell whether there were any.

    A cancel, or another step's failure, that ends the workflow while steps are being stored
    finds them unmarked and records those that have not ended as not run (``x:i``): each is
    cancelled here, so what runs is what the workflow says. The read comes with the mark, after
    the steps are stored: an end before it is seen here, and an end after it finds them marked
    (a cancel then cancels the ones still waiting itself, ``WorkflowResult.cancel``). A worker
    that reserved one meanwhile finds it recorded as not run before it starts it
    (worker/cancelled_steps.py), in the workflow's hash, or once that expired in the step's
    record (``stop_steps``).
    """
    not_run = backend.broker.mark_enqueued(workflow_id, [step.index for step in steps])
    stopped = [
        (
            step_task_id(workflow_id, step),
            StoppedStep(workflow_id=workflow_id, step=step.index, why=why, not_run=True),
        )
        for step, why in zip(steps, not_run, strict=True)
        if why
    ]
    stop_steps(backend, stopped)
    return bool(stopped)


def _backend_of(tasks: list[Task]) -> ThreadmillTaskBackend:
    """Return the one ThreadmillTaskBackend every step's task uses; refuse anything else."""
    aliases = sorted({task.backend for task in tasks})
    if len(aliases) > 1:
        raise InvalidTask(
            f"A workflow's steps must use one backend; these use {', '.join(map(repr, aliases))}. "
            "Give every task the same backend (task.using(backend=...))."
        )
    backend = threadmill_backend(aliases[0])
    for task in tasks:
        backend.validate_task(task)
        # Else stored, and failed only once due, in a worker, after the steps before it ran.
        backend.check_found_at_its_path(task)
        if getattr(task, "unique_for", None) is not None:
            raise InvalidTask(
                f"Task {task.module_path!r} is unique (unique_for), and a workflow step cannot "
                "be: the workflow already stores each step exactly once. Declare a second "
                "@task without unique_for (its own function, calling the same code) and use "
                "that one in the workflow."
            )
    return backend
