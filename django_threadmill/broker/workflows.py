"""The Redis side of workflows: each workflow's hash, and each queue's outbox of ended steps.

A workflow is one hash (``KeySpace.workflow``) written once when it is enqueued, with a TTL
that mark.lua takes away once its first steps are stored, and then only by advance.lua and
mark.lua. Its fields:

- ``n``: how many steps, ``created_ms``;
- ``status``: ``open``, then ``successful``, ``failed`` or ``cancelled``; ``why`` says why it
  failed or was cancelled;
- per step ``i``: ``p:i`` (the step as JSON: workflows/plan.py), ``after:i`` (the steps whose
  values make its input, comma-separated), ``cur:i`` (how far into ``after:i`` advance.lua
  found them all succeeded, so a group's members do not each read every member before them),
  ``next:i`` (the steps whose input takes its value), ``e:i`` (``due``, then ``enqueued``),
  ``s:i`` (how it ended), ``v:i`` (its result JSON, kept only when a step takes it: its
  record holds it), ``x:i`` (why it was not run);
- ``succeeded``: how many steps succeeded;
- ``trace``: the launch span's context (W3C trace context as JSON, as a payload's ``trace``),
  written only when the launch was traced: the later steps are enqueued in its trace.

A step's record carries ``workflow`` = ``<workflow id>:<step>``; finish.lua and cancel.lua
push the id of such a step that ended onto its queue's outbox in the call that records it,
and a drainer (workflows/advance.py) advances the workflow from there (docs/workflows.md);
which outboxes hold entries, its looks read (outbox_looks.py).
The record gets its ``result_ttl`` only when the drainer takes the entry out
(forget_entry.lua): gone before, it could not say which workflow to advance.
A step its workflow stopped keeps why in its own record too (``stop``, ``stop_why``: written
by cancel.lua), which outlives the workflow's hash while the step is held or waits.
"""

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from ..codec.ids import read_step_marker
from ..exceptions import PayloadError
from .outbox_looks import OutboxLooks
from .raw_replies import escaped
from .scripts import ScriptCall, ScriptName
from .types import stored_int

OUTBOX_BATCH = 100  # outbox entries read per call
WORKFLOWS_LISTED = 10_000  # newest workflow ids kept in the admin's list
# A new workflow's hash expires after this unless its first steps are marked: far longer than
# a launch takes, and short enough that one interrupted before it stored them does not linger.
LAUNCH_TTL_MS = 10 * 60 * 1000
GONE = "its record expired before its steps were marked enqueued"  # mark.lua found no hash
# What reading a workflow back takes of its hash: these fields, and these of each step. Not
# the values its steps hand on (``v:i``, kept for the drainers; a step's record holds its
# result), nor which step waits for which (``after:i``, ``next:i``, ``cur:i``).
READ_FIELDS = ("n", "status", "why", "created_ms", "succeeded", "trace")
READ_STEP_FIELDS = ("p", "e", "s", "x")

logger = logging.getLogger(__name__)


def stopped_reason(why: str, *, not_run: bool) -> str:
    """Why a step of a workflow that ended is cancelled before it runs: ``why`` is the
    workflow's (a cancel found the step enqueued), or why it recorded the step as not run.
    Every path that stops a step says it this way, so its record ends the same whichever
    path reached it first."""
    return f"its workflow ended ({why})" if not_run else f"its workflow was {why}"


@dataclass(frozen=True, slots=True, kw_only=True)
class StoppedStep:
    """A workflow step no worker starts (docs/workflows.md, Cancel)."""

    workflow_id: str
    step: int
    why: str  # the workflow's why (a cancel), or why it recorded the step as not run
    not_run: bool = False  # recorded as not run (``x:i``), not left enqueued by a cancel

    @property
    def reason(self) -> str:
        """Why it is cancelled before it runs (``stopped_reason``)."""
        return stopped_reason(self.why, not_run=self.not_run)

    def noted(self) -> tuple[str, str]:
        """The values of the step record's ``stop`` and ``stop_why`` fields (cancel.lua)."""
        return ("not_run" if self.not_run else "cancelled", self.why)


def read_names(count: str | None, size: int) -> list[str] | None:
    """The fields of a workflow's hash of ``size`` fields whose step count reads ``count``
    that reading it back takes (``READ_FIELDS``, and ``READ_STEP_FIELDS`` of each step); None,
    to read it whole, when it has no count, or one its fields cannot hold (a hash something
    else wrote: the reader names what it lacks)."""
    steps = stored_int(count)
    if steps is None or not 0 <= steps <= size:
        return None
    per_step = (f"{kind}:{i}" for i in range(steps) for kind in READ_STEP_FIELDS)
    return [*READ_FIELDS, *per_step]


def _named(names: list[str], values: list[str | None]) -> dict[str, str]:
    """The fields ``names`` that HMGET found, with the ``values`` it read."""
    return {name: value for name, value in zip(names, values, strict=True) if value is not None}


class Workflows(OutboxLooks):
    """Workflow hashes and outboxes, one key per call."""

    def create_workflow(self, workflow_id: str, fields: Mapping[str, str | int]) -> None:
        """Store a new workflow's hash with its creation time (Redis clock), expiring after
        ``LAUNCH_TTL_MS`` until its first steps are marked (mark.lua), both written in one call
        (create_workflow.lua), then list it for the admin, which keeps the newest
        ``WORKFLOWS_LISTED`` (two slots, two calls).

        A launch interrupted before it stored a step (Redis gone, its process killed) cancels
        nothing, and its workflow, open with no step to advance it, would stay so for good.
        """
        created_ms = self.server_time_ms()
        stored = [("created_ms", created_ms), *fields.items()]
        self._run(
            ScriptCall(
                ScriptName.CREATE_WORKFLOW,
                (self.keyspace.workflow(workflow_id),),
                (LAUNCH_TTL_MS, *[part for field in stored for part in field]),
            )
        )
        with self.translated_errors(), self.client.pipeline(transaction=False) as pipe:
            pipe.zadd(self.keyspace.workflows, {workflow_id: created_ms})
            pipe.zremrangebyrank(self.keyspace.workflows, 0, -WORKFLOWS_LISTED - 1)
            pipe.execute()

    def advance_workflow(
        self, workflow_id: str, step: int, outcome: str, value: str
    ) -> tuple[str, list[int]]:
        """Record how ``step`` ended; return the workflow's status and the steps now due
        (advance.lua)."""
        status, *due = self._advance(workflow_id, step, outcome, value)
        return str(status), [int(step) for step in due]

    def cancel_workflow(self, workflow_id: str, why: str) -> tuple[str, str, list[int]]:
        """End an open workflow as cancelled for ``why`` (advance.lua); return the status it
        had, and, when it is cancelled now (by this call or an earlier one), that cancel's why
        and the steps it marked due or enqueued, which the caller stops: read in the same call,
        as its hash may expire (``result_ttl``) before another read."""
        status, *rest = self._advance(workflow_id, "", "cancelled", why)
        if not rest:
            return str(status), "", []
        recorded, *marked = rest
        return str(status), str(recorded), [int(step) for step in marked]

    def _advance(
        self, workflow_id: str, step: int | str, outcome: str, value: str
    ) -> list[str | int]:
        """Run advance.lua for ``step`` ("" for a cancel); return its reply."""
        ttl_ms = self.settings.result_ttl_ms
        return cast(
            list[str | int],
            self._run(
                ScriptCall(
                    ScriptName.ADVANCE,
                    (self.keyspace.workflow(workflow_id),),
                    (step, outcome, value, "" if ttl_ms is None else ttl_ms),
                )
            ),
        )

    def mark_enqueued(self, workflow_id: str, steps: Sequence[int]) -> list[str | None]:
        """Note that ``steps`` are stored, so no later drain enqueues them again, and keep an
        open workflow for good (mark.lua); return, in the same round trip, why each was
        recorded as not run meanwhile (None: it was not), or ``GONE`` for each when the
        workflow's hash is gone (a launch that outlived ``LAUNCH_TTL_MS``)."""
        if not steps:
            return []
        exists, *not_run = self._run(
            ScriptCall(ScriptName.MARK, (self.keyspace.workflow(workflow_id),), tuple(steps))
        )
        return cast(list[str | None], not_run) if exists else [GONE] * len(steps)

    def workflow_values(self, workflow_id: str, names: Sequence[str]) -> list[str | None]:
        """Return the fields ``names`` of a workflow's hash, None for each one absent."""
        if not names:
            return []
        with self.translated_errors(read=True):
            return cast(
                list[str | None], self.client.hmget(self.keyspace.workflow(workflow_id), names)
            )

    def workflow_value_chars(self, workflow_id: str, names: Sequence[str]) -> list[int]:
        """Return the length of each field ``names`` of a workflow's hash (0 for one absent),
        in one round trip, reading none of them."""
        if not names:
            return []
        key = self.keyspace.workflow(workflow_id)
        with self.translated_errors(read=True), self.client.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.hstrlen(key, name)
            return [int(chars) for chars in pipe.execute()]

    def stopped_step_of(self, task_id: str) -> StoppedStep | None:
        """Return why no worker starts ``task_id`` when it is a workflow step that must not
        run (``stopped_step``), else None: one HGET of its record, and for a step one HMGET.

        A record whose key is not a hash reads as no step: the call this check precedes
        says what it is.
        """
        try:
            marker = self._read_record(
                task_id, lambda key: cast(str | None, self.client.hget(key, "workflow"))
            )
        except PayloadError:
            return None
        return self.stopped_step(task_id, marker)

    def stopped_step(self, task_id: str, marker: str | None) -> StoppedStep | None:
        """Return why no worker starts ``task_id``, the step a record's ``workflow`` field
        ``marker`` names: its workflow was cancelled, or ended and recorded it as not run
        (``x:i``, a step a drainer was storing then). None when it may run, or is no step.
        One HMGET of the workflow, for a step only: a worker asks before it starts every step.

        A workflow's hash expires ``result_ttl`` after it ended, and a step a worker held then
        may wait longer (its buffer, its retry): without the hash, the step's own record says
        whether its workflow stopped it (``stop``), one HMGET more.
        """
        marked = read_step_marker(marker)
        if marked is None:
            return None
        workflow_id, step = marked
        status, why, not_run = self.workflow_values(workflow_id, ["status", "why", f"x:{step}"])
        if not_run is not None:
            return StoppedStep(workflow_id=workflow_id, step=step, why=not_run, not_run=True)
        if status == "cancelled":
            return StoppedStep(workflow_id=workflow_id, step=step, why=why or "cancelled")
        if status is None:  # expired: every launch writes it
            return self._noted_stop(task_id, workflow_id, step)
        return None

    def _noted_stop(self, task_id: str, workflow_id: str, step: int) -> StoppedStep | None:
        """Return the stop cancel.lua noted on step ``task_id``'s record, None for none (nor
        for a record that cannot be read: the call this check precedes says what it is)."""
        try:
            noted = self._read_record(
                task_id,
                lambda key: cast(list[str | None], self.client.hmget(key, ["stop", "stop_why"])),
            )
        except PayloadError:
            return None
        kind, why = noted or (None, None)
        if kind is None:
            return None
        return StoppedStep(
            workflow_id=workflow_id, step=step, why=why or "cancelled", not_run=kind == "not_run"
        )

    def workflow_fields(self, workflow_id: str) -> dict[str, str]:
        """Return what reading a workflow back takes of its hash (``read_names``; {} when
        unknown or expired): its step count and size, then those fields, two round trips.

        Read whole, the hash gave every value a step hands on, which its record holds too: a
        workflow of 50 steps returning 1 MB each read 50 MB on every view of its admin page,
        which reads at most 16 KiB of each step's record (docs/admin.md, Cost per page view).
        """
        key = self.keyspace.workflow(workflow_id)
        with self.translated_errors(read=True):
            with self.client.pipeline(transaction=False) as pipe:
                pipe.hget(key, "n")
                pipe.hlen(key)
                names = read_names(*pipe.execute())
            if names is None:
                return cast(dict[str, str], self.client.hgetall(key))
            return _named(names, cast(list[str | None], self.client.hmget(key, names)))

    async def aworkflow_fields(self, workflow_id: str) -> dict[str, str]:
        """Async twin of ``workflow_fields``, on the asyncio client."""
        client = self._async_client()[0]
        key = self.keyspace.workflow(workflow_id)
        async with self.atranslated_errors(read=True):
            async with client.pipeline(transaction=False) as pipe:
                pipe.hget(key, "n")
                pipe.hlen(key)
                names = read_names(*await pipe.execute())
            if names is None:
                return cast(dict[str, str], await client.hgetall(key))
            return _named(names, cast(list[str | None], await client.hmget(key, names)))

    def workflow_summaries(self, workflow_ids: Sequence[str]) -> list[dict[str, str]]:
        """Return the summary fields of each workflow ({} for one that expired), one round
        trip: status, n, succeeded, created_ms, why."""
        names = ("status", "n", "succeeded", "created_ms", "why")
        with self.translated_errors(read=True), self.client.pipeline(transaction=False) as pipe:
            for workflow_id in workflow_ids:
                pipe.hmget(self.keyspace.workflow(workflow_id), names)
            replies = pipe.execute()
        return [
            {name: value for name, value in zip(names, reply, strict=True) if value is not None}
            for reply in replies
        ]

    def recent_workflows(self, count: int) -> list[str]:
        """Return the ids of the ``count`` newest workflows still listed, newest first.

        Read as bytes: an id that is not UTF-8 (only written by hand) comes back escaped
        (``\\xff``), names no workflow, and lists as expired, where it failed the page.
        """
        with self.translated_errors(read=True):
            found = self.raw_command("ZREVRANGE", self.keyspace.workflows, 0, count - 1)
        return [escaped(workflow_id) for workflow_id in found]

    # Outboxes ------------------------------------------------------------------------------

    def outbox_entries(self, part: str, start: int = 0) -> list[str]:
        """Return the oldest ids in ``part``'s outbox after the first ``start`` (at most
        ``OUTBOX_BATCH``)."""
        outbox = self.queue_keys(part).outbox
        with self.translated_errors(read=True):
            return cast(list[str], self.client.lrange(outbox, start, start + OUTBOX_BATCH - 1))

    def forget_outbox_entry(self, part: str, task_id: str, *, found_waiting: bool = False) -> None:
        """Take ``task_id`` out of ``part``'s outbox, its workflow has advanced, and start its
        record's ``result_ttl``: a step's record keeps none until then (forget_entry.lua).

        ``found_waiting``: the drainer found the step requeued, waiting to run again. Should it
        have ended again since, the entry stays for the next read to advance from: the one
        taken out might be the new end's (forget_entry.lua, Fence).
        """
        keys = self.queue_keys(part)
        ttl_ms = self.settings.result_ttl_ms
        self._run(
            ScriptCall(
                ScriptName.FORGET_ENTRY,
                (keys.record_prefix, keys.outbox),
                (task_id, "" if ttl_ms is None else ttl_ms, "1" if found_waiting else ""),
            )
        )
