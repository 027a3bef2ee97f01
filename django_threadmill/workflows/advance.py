"""Advance workflows from the outboxes: whoever finds an entry enqueues what it made due.

finish.lua (and cancel.lua) push a workflow step that ended onto its queue's outbox in the call
that records how it ended, so the entry exists exactly when the outcome does; a script that sets
a step aside as damaged pushes it too, and its workflow fails naming it. A drainer (a
worker's ``threadmill-workflows`` thread, every reap pass of ``threadmill_reap`` or of a
worker's supervisor, ``testing.drain()``) then, per entry: records the
outcome in the workflow (advance.lua), enqueues the steps it made due under their fixed ids,
marks them enqueued, and only then takes the entry out. A drainer that dies anywhere in
between leaves the entry for the next one, which repeats the same calls: enqueue skips an id
that exists, so each step is stored exactly once (docs/workflows.md, Exactly once).
"""

import logging
from collections.abc import Sequence
from contextlib import AbstractContextManager, ExitStack
from enum import Enum
from typing import Any

from ..backend import ThreadmillTaskBackend
from ..broker.damaged import set_aside_error
from ..broker.raw_replies import controls_escaped
from ..broker.reads import damaged_fields
from ..broker.workflows import OUTBOX_BATCH
from ..codec.ids import read_step_marker
from ..codec.payloads import load_task
from ..codec.results import (
    MAX_ERROR_TEXT_CHARS,
    cut_to,
    error_text,
    parse_error,
    record_problem,
)
from ..compat import TaskError
from ..exceptions import BrokerUnavailable, Cancelled, MaybeApplied, PartlyEnqueued, PayloadError
from ..observability.tracing import enqueue_step_span
from .failed_entries import RETRY_AFTER_S, FailedEntries
from .launch import PreparedStep, enqueue_steps, step_task
from .plan import (
    PlannedStep,
    input_value,
    step_field,
    step_task_id,
    stored_step,
    stored_value,
    value_field,
)

logger = logging.getLogger(__name__)

CANCELLED_PATH = f"{Cancelled.__module__}.{Cancelled.__qualname__}"
ENDED = ("successful", "failed")  # the states a step's record ends in (_how_it_ended)
# Python prints an exception group inside this margin, and its members deeper in.
GROUP_MARGIN = "  | "


class Advance(Enum):
    """What advancing from an outbox entry found (``advance_from``)."""

    ADVANCED = "advanced"  # the step had ended: its workflow has its outcome
    NOTHING = "nothing"  # its record or its workflow is gone or damaged: nothing to advance
    WAITING = "waiting"  # requeued since it ended: its next end fills the outbox again


def drain(backend: ThreadmillTaskBackend, part: str, failed: FailedEntries | None = None) -> int:
    """Advance the workflow of every entry in ``part``'s outbox; return how many workflows
    advanced (an entry that advanced none, its step's record or workflow gone, or the step
    requeued, is taken out and not counted; a requeued step that ended again meanwhile keeps
    it, read again to advance from its new end).

    An entry whose advance raises, while Redis answers, is logged and left in the outbox, and
    held in ``failed`` (this call's own when None) for later drains to pass over. Raises
    ``BrokerUnavailable`` when Redis does not answer: every entry stays for the next look.
    """
    failed = FailedEntries() if failed is None else failed
    broker, advanced, passed_over = backend.broker, 0, 0
    # Entries passed over stay at the outbox's head: each read starts after them.
    while entries := broker.outbox_entries(part, passed_over):
        for task_id in entries:
            held = failed.held(task_id)
            found = None if held else _advanced(backend, part, task_id, failed)
            if found is None:
                passed_over += 1
                continue
            broker.forget_outbox_entry(part, task_id, found_waiting=found is Advance.WAITING)
            advanced += found is Advance.ADVANCED
        if len(entries) < OUTBOX_BATCH:
            break
    return advanced


def _advanced(
    backend: ThreadmillTaskBackend, part: str, task_id: str, failed: FailedEntries
) -> Advance | None:
    """Advance from ``task_id``, an entry of ``part``'s outbox; return what that found
    (``advance_from``), or None, the entry to stay, when that raised while Redis answers: it
    is logged and held in ``failed``.

    A key of another type (docs/lifecycle.md, Keys of another type) in the queue of a step
    that became due refuses every advance from this entry alone; raised, it stopped the drain
    at this entry, and every workflow whose entry came after it waited until someone deleted
    the key.
    """
    try:
        advanced = advance_from(backend, task_id, part)
    except (MaybeApplied, PartlyEnqueued):
        raise  # a call whose fate is unknown (a dropped connection, a failover): looked at again
    except BrokerUnavailable as exc:
        backend.broker.server_time_ms()  # raises when Redis itself is away: every entry stays
        logger.warning(
            "Workflow not advanced from a step, Redis refused a key it needs; its outbox entry "
            "stays and is tried again in %ds task_id=%s error=%s",
            RETRY_AFTER_S,
            task_id,
            exc,
        )
        failed.failed(task_id)
        return None
    except Exception:
        logger.exception(
            "Workflow not advanced from a step, its outbox entry stays and is tried again in "
            "%ds task_id=%s",
            RETRY_AFTER_S,
            task_id,
        )
        failed.failed(task_id)
        return None
    failed.advanced(task_id)
    return advanced


def drain_queues(
    backend: ThreadmillTaskBackend,
    queues: list[str],
    failed: FailedEntries | None = None,
    also: Sequence[str] = (),
) -> int:
    """Drain every outbox of ``queues``, and of the parts ``also`` (another shard count's),
    that holds entries; return how many workflows advanced (``drain``)."""
    return drain_parts(backend, backend.broker.parts_with_outbox(queues, also), failed)


def drain_parts(
    backend: ThreadmillTaskBackend, parts: Sequence[str], failed: FailedEntries | None = None
) -> int:
    """Drain the outbox of each of the queue ``parts``; return how many workflows advanced
    (``drain``)."""
    failed = FailedEntries() if failed is None else failed
    return sum(drain(backend, part, failed) for part in parts)


def advance_from(backend: ThreadmillTaskBackend, task_id: str, part: str | None = None) -> Advance:
    """Record how the step ``task_id`` ended in its workflow, and enqueue what that made due;
    return ``ADVANCED``, or ``WAITING`` when the step was requeued, or ``NOTHING`` when its
    record or its workflow is gone or damaged.

    The record is read in ``part``, whose outbox holds the entry (None: the part the settings'
    shard count gives): under an earlier count it is not where the settings' count looks
    (docs/scaling.md, Changing the shard count)."""
    broker = backend.broker
    try:
        record: dict[str, str] | PayloadError | None = broker.record(task_id, part)
    except PayloadError as exc:
        record = exc  # not read whole: its workflow field alone may still name its workflow
    if isinstance(record, PayloadError):
        marker = broker.step_marker(task_id, part)
    else:
        marker = None if record is None else record.get("workflow")
    marked = read_step_marker(marker)
    if record is None or marked is None:
        logger.error(
            "Workflow step record is gone or damaged, its workflow cannot advance from it "
            "task_id=%s",
            task_id,
        )
        return Advance.NOTHING
    workflow_id, index = marked
    if (damage := _damage(backend, task_id, part, record)) is not None:
        return _fail_damaged(backend, workflow_id, index, damage)
    assert not isinstance(record, PayloadError)  # _damage returned it
    ended = _how_it_ended(record)
    if ended is None:  # requeued before this drain: its next end fills the outbox again
        return Advance.WAITING
    outcome, value = ended
    status, due = backend.broker.advance_workflow(workflow_id, index, outcome, value)
    if status == "missing":
        # Most often a step that outlived its ended workflow's result_ttl: steps already
        # enqueued still run (docs/workflows.md, Semantics: Expiry), so this is no error.
        logger.warning(
            "Workflow of a step is gone, nothing more is enqueued from it: it ended more than "
            "result_ttl ago while this step was enqueued or running, or its launch was "
            "interrupted before it marked its first steps workflow_id=%s task_id=%s",
            workflow_id,
            task_id,
        )
        return Advance.NOTHING
    if status == "damaged":
        logger.error(
            "Workflow of a step is damaged, nothing more is enqueued workflow_id=%s task_id=%s",
            workflow_id,
            task_id,
        )
        return Advance.NOTHING
    if due:
        enqueue_due(backend, workflow_id, due)
    return Advance.ADVANCED


def _damage(
    backend: ThreadmillTaskBackend,
    task_id: str,
    part: str | None,
    record: dict[str, str] | PayloadError,
) -> PayloadError | None:
    """Return why the step ``task_id``, whose ``record`` in ``part`` was read (or the error
    its read raised), cannot be advanced from, or None.

    A script set it aside as damaged (``part``'s ``P:damaged`` lists it): it never runs nor
    ends, and its workflow stayed open for good (docs/workflows.md, A step set aside); its
    record may look as if it waits (state ready, a count of errors past any attempt). Else
    its record cannot be read, or holds what no script writes (``record_problem``), as
    ``get_result`` raises. ``P:damaged`` is read only for a step that has not ended or is
    damaged: one that ended advances as it ended.
    """
    held = None if isinstance(record, PayloadError) else record_problem(record)
    if isinstance(record, dict) and held is None and record.get("state") in ENDED:
        return None
    broker = backend.broker
    key = broker.record_key(task_id, part)
    if (note := broker.set_aside_note(task_id, part)) is not None:
        return set_aside_error(backend.alias, task_id, key, note)
    if isinstance(record, PayloadError):
        return record
    return None if held is None else damaged_fields(task_id, key, held)


def _fail_damaged(
    backend: ThreadmillTaskBackend, workflow_id: str, index: int, damage: PayloadError
) -> Advance:
    """End the workflow as failed from its step ``index``, whose record is damaged: how it
    ended cannot be read. A success without its result handed the next step None, and a state
    written by hand was taken for a requeue, which left the workflow open for good."""
    logger.error(
        "Workflow step record is damaged, the workflow fails workflow_id=%s step=%d: %s",
        workflow_id,
        index,
        damage,
    )
    why = cut_to(str(damage), MAX_ERROR_TEXT_CHARS)  # copied into every step it leaves unrun
    status, _ = backend.broker.advance_workflow(workflow_id, index, "failed", why)
    return Advance.NOTHING if status in ("missing", "damaged") else Advance.ADVANCED


def enqueue_due(backend: ThreadmillTaskBackend, workflow_id: str, due: list[int]) -> None:
    """Enqueue the ``due`` steps with their inputs, under their fixed ids; mark them enqueued.

    A step that cannot be enqueued (its task no longer imports, its input is too large, the
    workflow's hash holds something that is not a step or a value) ends the workflow as failed,
    naming why.
    """
    broker = backend.broker
    # The due steps and their inputs' values only: a chain of N steps reads N in all.
    status, launch, *step_texts = broker.workflow_values(
        workflow_id, ["status", "trace", *map(step_field, due)]
    )
    if status is None:
        logger.error(
            "Workflow is gone while steps were due, nothing more is enqueued workflow_id=%s",
            workflow_id,
        )
        return
    if status != "open":  # cancelled, or failed, since advance.lua: it recorded them not run
        return
    index = due[0]  # the step named when the workflow's own fields cannot be read
    groups: dict[str, list[PreparedStep]] = {}
    # Each step's enqueue span, in the launch's trace, stays open until the step is stored.
    with ExitStack() as spans:
        try:
            steps = {
                j: stored_step(workflow_id, j, text)
                for j, text in zip(due, step_texts, strict=True)
            }
            inputs = list(dict.fromkeys(i for j in due for i in steps[j].waits_for()))
            chars = _value_chars(backend, workflow_id, inputs)
            for index in due:
                _refuse_inputs_past_the_limit(backend, steps[index], chars)
            value_texts = broker.workflow_values(workflow_id, [value_field(i) for i in inputs])
            values = {
                i: stored_value(workflow_id, i, text)
                for i, text in zip(inputs, value_texts, strict=True)
            }
            for index in due:
                step = steps[index]
                spans.enter_context(_enqueue_span(workflow_id, step, launch))
                prepared = _prepare(backend, workflow_id, step, values)
                groups.setdefault(step.queue, []).append(prepared)
        except (PayloadError, TypeError, ValueError) as exc:
            logger.error(
                "Workflow step cannot be enqueued, the workflow fails workflow_id=%s step=%d: %s",
                workflow_id,
                index,
                controls_escaped(error_text(exc)),  # as a task's failure line: from outside
            )
            why = cut_to(f"not enqueued: {exc}", MAX_ERROR_TEXT_CHARS)  # as _what_stopped
            broker.advance_workflow(workflow_id, index, "failed", why)
            return
        enqueue_steps(backend, workflow_id, groups, [steps[index] for index in due])


def _value_chars(
    backend: ThreadmillTaskBackend, workflow_id: str, inputs: list[int]
) -> dict[int, int]:
    """Return the length of each of the ``inputs``' values, unread (one round trip); none for
    a single input: no longer than ``max_result_bytes``, it is read as it is, and looked at
    first it would cost a chain a round trip more per step."""
    if len(inputs) < 2:
        return {}
    fields = [value_field(i) for i in inputs]
    return dict(zip(inputs, backend.broker.workflow_value_chars(workflow_id, fields), strict=True))


def _refuse_inputs_past_the_limit(
    backend: ThreadmillTaskBackend, step: PlannedStep, chars: dict[int, int]
) -> None:
    """Raise ``ValueError`` for a due ``step`` whose inputs' values alone pass
    ``max_payload_bytes`` (their lengths in ``chars``), before any is read: a group of 10,000
    steps returning 1 MiB each made the drainer read and decode 10 GB for the step after it,
    only to refuse its payload. A value's JSON is the one its payload holds, so the payload
    would be longer still."""
    limit = backend.settings.max_payload_bytes
    total = sum(chars.get(i, 0) for i in step.waits_for())
    if total > limit:
        raise ValueError(
            f"Task {step.path!r} payload is above max_payload_bytes={limit}: the values of "
            f"the {len(step.waits_for())} steps it takes are {total} bytes. Store large data "
            "elsewhere (a file or a model) and pass its key, or raise "
            "OPTIONS['max_payload_bytes']."
        )


def _enqueue_span(
    workflow_id: str, step: PlannedStep, launch: str | None
) -> AbstractContextManager[object]:
    """The producer span of a due ``step``, a child of its workflow's ``launch`` span (the
    hash's ``trace``); none for a workflow launched untraced."""
    return enqueue_step_span(
        launch,
        step.path,
        step.queue,
        task_id=step_task_id(workflow_id, step),
        workflow_id=workflow_id,
        step=step.index,
    )


def _prepare(
    backend: ThreadmillTaskBackend, workflow_id: str, step: PlannedStep, values: dict[int, Any]
) -> PreparedStep:
    """Encode the due ``step`` with its input, built from ``values``, under its fixed id."""
    task = load_task(
        step.path,
        backend=backend.alias,
        queue=step.queue,
        payload={"priority": step.priority, "run_after_ms": step.run_after_ms},
    )
    return step_task(backend, workflow_id, step, task, [input_value(step, values), *step.args])


def _how_it_ended(record: dict[str, str]) -> tuple[str, str] | None:
    """Return the step's outcome and value (result JSON, or what stopped it), or None when
    it has not ended (it was requeued)."""
    state = record.get("state")
    if state == "successful":
        return "successful", record["result"]  # there: record_problem checked
    if state != "failed":
        return None
    error = parse_error(record.get(f"error:{record.get('nerrors', '0')}", ""))
    if error.exception_class_path == CANCELLED_PATH:
        return "cancelled", _what_stopped(error)
    return "failed", _what_stopped(error)


def _what_stopped(error: TaskError) -> str:
    """Return the line of ``error``'s traceback that names the exception and starts its
    message, cut to ``MAX_ERROR_TEXT_CHARS``: the workflow copies it into every step it leaves
    unrun. The last line alone is the end of a message on several lines (a database error's
    "LINE 1: ...", a note), or of one cut short, and need not name the exception; an exception
    group's (an ``asyncio.TaskGroup``'s) is the border under its members."""
    path = error.exception_class_path
    shown = path.removeprefix("builtins.").removeprefix("__main__.")  # as Python prints it
    lines = [line.removeprefix(GROUP_MARGIN) for line in error.traceback.strip().splitlines()]
    found = next(
        (line for line in reversed(lines) if line == shown or line.startswith(f"{shown}:")),
        f"{shown}: {lines[-1]}" if lines else shown,
    )
    return cut_to(found, MAX_ERROR_TEXT_CHARS)
