"""The task detail page and the "show all" view of one stored value."""

from collections.abc import Sequence
from typing import Any

from django.http import Http404, HttpResponse, StreamingHttpResponse

from ..broker.inspect import DAMAGED, SHOW_ALL_BYTES, TaskDetail, task_path
from ..broker.inspect.source import Source
from ..broker.types import stored_int
from ..broker.workflows import StoppedStep
from ..codec.ids import read_step_marker, shown_id, worker_host_and_pid
from ..codec.payloads import decode_payload
from ..codec.progress import stored_progress
from ..codec.results import attempted_ms, errors_of, parse_error
from ..codec.text import printable
from ..compat import TaskError
from ..exceptions import PayloadError
from ..retry import MAX_ATTEMPTS
from .actions import ran_every_attempt
from .display import (
    INDENT_CHARS,
    PAGE_INDENT_CHARS,
    byte_size,
    page_address,
    page_json,
    page_value,
    pretty_json,
    pretty_value,
    shown,
    shown_end,
    state_label,
    when,
)
from .workflows import WORKFLOW_URL_NAME

# Said on the page of a task requeue refuses for having run every attempt (retry.py).
EXHAUSTED = (
    f"after its {MAX_ATTEMPTS:,} attempts, the most a task runs, so it is not requeued: "
    "enqueue the task anew to run it (docs/lifecycle.md, Retries)"
)
FINISHED_STATES = frozenset({"successful", "failed"})  # those given result_ttl
# Attempts whose error the page shows with its traceback, the newest; earlier ones get a line
# each. A task may fail 1,000 times, and showing every traceback made a page of megabytes.
ERRORS_SHOWN = 10
STREAM_CHUNK_CHARS = 1024 * 1024  # characters "Show all" escapes and sends at a time


class TooBigToShow(Exception):
    """A value "Show all" does not read: one above SHOW_ALL_BYTES."""


def detail_or_404(source: Source, task_id: str, whole: Sequence[str] = ()) -> TaskDetail:
    """Return the record of ``task_id`` (the fields in ``whole`` read whatever their size)."""
    detail = source.inspector.detail(task_id, whole=whole)
    if detail is None:
        raise Http404(
            f"No task {shown_id(task_id)} in backend {source.alias!r}: it never existed, or its "
            "result expired (result_ttl) or was purged."
        )
    return detail


def _payload(record: dict[str, str]) -> tuple[dict[str, Any], str]:
    """Return the decoded payload and "", or {} and why it cannot be read."""
    try:
        return decode_payload(record.get("payload")), ""
    except PayloadError as exc:
        return {}, str(exc)


def _refused(detail: TaskDetail, name: str) -> str:
    """Say where to read field ``name`` of the record if "Show all" does not ("" if it does)."""
    if detail.unread.get(name, 0) <= SHOW_ALL_BYTES:
        return ""
    return (
        f"That is more than Show all reads ({byte_size(SHOW_ALL_BYTES)}): read it with "
        f"redis-cli --raw HGET {detail.key!r} {name!r}"
    )


def _error(detail: TaskDetail, number: int, error: TaskError, *, full: bool) -> dict[str, Any]:
    """Return one attempt's error as the page shows it: one too big to read for the page
    (``TaskDetail.unread``) by its size, with a link to it, or where to read it if "Show all"
    does not."""
    unread = detail.unread.get(f"error:{number}")
    return {
        "number": number,
        "field": f"traceback:{number}",
        "unread": None if unread is None else byte_size(unread),
        "refused": _refused(detail, f"error:{number}"),
        "exception_class_path": error.exception_class_path,
        "traceback": shown_end(error.traceback) if full and unread is None else None,
    }


def _errors(detail: TaskDetail) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return the earlier attempts' errors (a line each), then the newest ``ERRORS_SHOWN`` with
    the end of their traceback, where the exception and its message are; oldest first."""
    errors = errors_of(detail.record)
    first_shown = max(0, len(errors) - ERRORS_SHOWN)
    listed = [
        _error(detail, n, error, full=n > first_shown) for n, error in enumerate(errors, start=1)
    ]
    return listed[:first_shown], listed[first_shown:]


def _other_unread(unread: dict[str, int]) -> str:
    """Name the values left unread that the page shows nowhere else with their size ("" if
    none): only a hand-written record holds such a big state, time or worker list."""
    others = [
        f"{name} ({byte_size(size)})"
        for name, size in sorted(unread.items())
        if name not in ("payload", "result") and not name.startswith("error:")
    ]
    return f"Too big to read for this page: {', '.join(others)}." if others else ""


def raw_fields(field: str) -> tuple[str, ...]:
    """Return the record field the "show all" view of ``field`` reads whole (none for a field
    it does not serve, which answers 404)."""
    kind, _, number = field.partition(":")
    if field in ("payload", "args", "kwargs"):
        return ("payload",)
    if field == "result":
        return ("result",)
    return (f"error:{number}",) if kind in ("error", "traceback") else ()


def _lease(detail: TaskDetail, workers: list[str]) -> dict[str, Any] | None:
    state = detail.record.get("state")
    if state not in ("reserved", "running"):
        return None
    holder = workers[-1] if state == "running" and workers else ""
    return {
        "holder": holder or "a worker's prefetch buffer (not started yet)",
        "deadline": when(detail.lease_deadline_ms),
        "token": detail.record.get("token", ""),
    }


def _workflow(alias: str, record: dict[str, str]) -> dict[str, Any] | None:
    """The workflow this task is a step of, with the address of its page: "" for an id written
    by hand that no URL names (``page_address``; one ending in "/" answered the task's page
    with a 500, one with a "/" inside linked to another alias's page)."""
    marked = read_step_marker(record.get("workflow"))
    if marked is None:
        return None
    workflow_id, step = marked
    url = page_address(WORKFLOW_URL_NAME, alias, workflow_id)
    return {"id": workflow_id, "step": step, "url": url}


def _stopped(stopped: StoppedStep | None) -> str:
    """Say why the workflow keeps this step from running again ("" when it does not)."""
    if stopped is None:
        return ""
    return "recorded as not run by its workflow" if stopped.not_run else "cancelled"


def _place(detail: TaskDetail) -> str:
    """Say where a READY task waits ("" if it is not in the ready set): in its shard, for a
    sharded queue, whose order holds within a shard only (docs/scaling.md, A hot queue beyond
    one node: queue_shards); the first task of each shard read "1 (1 runs next)"."""
    if detail.ready_position is None:
        return ""
    place = detail.ready_position + 1
    if detail.shards == 1:
        return f"{place} (1 runs next)"
    return (
        f"{place} in its shard (1 runs next there); the queue has {detail.shards} shards, and "
        "priority and FIFO order hold within a shard, not across them (docs/scaling.md, A hot "
        "queue beyond one node: queue_shards)"
    )


def _kept(source: Source, detail: TaskDetail, state: str, is_step: bool) -> str:
    """Say how long the record is still kept. A finished one without a TTL is kept under
    ``result_ttl = None``, or is a step its workflow has not advanced from yet (docs/lifecycle.md,
    States): both read "until it finishes" of a task that had finished."""
    if detail.ttl_ms is not None:
        return f"{detail.ttl_ms // 1000} s more"
    if state not in FINISHED_STATES:
        return "until it finishes (pending tasks never expire)"
    result_ttl_s = source.settings.result_ttl_s
    if result_ttl_s is None:
        return "until purged (result_ttl is None: results never expire)"
    if is_step:
        return (
            f"until its workflow advances from it, then {result_ttl_s:.15g} s "
            "(docs/lifecycle.md, States)"
        )
    return "no expiry: the record is kept until deleted"


def _stored_elsewhere(source: Source, detail: TaskDetail) -> str:
    """Say that the record lies under another shard count than the settings give ("" if
    not): requeue and cancel go where the settings put the task, and would not find it."""
    configured = source.settings.shards_of(detail.queue)
    if detail.shards == configured:
        return ""
    return (
        f"Stored under {detail.shards} shard{'s' if detail.shards > 1 else ''} of queue "
        f"{detail.queue}, where the settings give {configured} (docs/scaling.md, Changing the "
        "shard count): requeue and cancel reach it only with the settings it was stored under."
    )


def detail_context(source: Source, detail: TaskDetail) -> dict[str, Any]:
    """Return the template context of the detail page of one task."""
    record = detail.record
    payload_unread = detail.unread.get("payload")
    unreadable = detail.damaged or payload_unread is not None
    payload, payload_error = ({}, "") if unreadable else _payload(record)
    workers = record["workers"].split("\n") if record.get("workers") else []
    state = DAMAGED if detail.damaged else record.get("state", "")
    # A failed step its workflow stopped (cancelled, or recorded as not run): no worker starts
    # one, so the requeue action refuses it (StepOfCancelledWorkflow) and the page offers none.
    # Read for a failed task only.
    stopped = (
        source.broker.stopped_step(detail.id, record.get("workflow")) if state == "failed" else None
    )
    exhausted = ran_every_attempt(state, stored_int(record.get("nerrors")) or 0)
    earlier_errors, errors = _errors(detail)
    result_unread = detail.unread.get("result")
    payload_chars = len(record.get("payload", ""))
    elsewhere = _stored_elsewhere(source, detail)
    workflow = _workflow(source.alias, record)
    return {
        "alias": source.alias,
        "detail": detail,
        "state": state,
        "label": state_label(state),
        "progress": stored_progress(record),
        "workflow": workflow,
        "workflow_stopped": _stopped(stopped),
        "path": payload.get("path") or task_path(record.get("payload")),
        "priority": payload.get("priority"),
        "payload_error": payload_error,
        "payload_raw": shown(record.get("payload", "")) if payload_error else None,
        "payload_unread": None if payload_unread is None else byte_size(payload_unread),
        "payload_refused": _refused(detail, "payload"),
        "args": page_value(payload.get("args", []), stored_chars=payload_chars),
        "kwargs": page_value(payload.get("kwargs", {}), stored_chars=payload_chars),
        "result": page_json(record["result"]) if "result" in record else None,
        "page_indent_chars": PAGE_INDENT_CHARS,
        "indent_chars": INDENT_CHARS,
        "result_unread": None if result_unread is None else byte_size(result_unread),
        "result_refused": _refused(detail, "result"),
        "other_unread": _other_unread(detail.unread),
        "earlier_errors": earlier_errors,
        "errors": errors,
        "workers": [(w, *worker_host_and_pid(w)) for w in workers],
        "lease": _lease(detail, workers),
        "times": [
            ("Enqueued", when(record.get("enqueued_ms"))),
            ("Run after", when(record.get("run_after_ms"))),
            ("Due (delayed)", when(detail.due_ms)),
            ("Started (first attempt)", when(record.get("started_ms"))),
            ("Last attempt started", when(attempted_ms(record))),
            ("Finished", when(record.get("finished_ms"))),
        ],
        "place": _place(detail),
        "kept": _kept(source, detail, state, is_step=workflow is not None),
        "exhausted": EXHAUSTED if exhausted else "",
        "stored_elsewhere": elsewhere,
        "can_requeue": state == "failed" and stopped is None and not exhausted and not elsewhere,
        "can_cancel": state == "ready" and not elsewhere,
    }


def raw_value(detail: TaskDetail, field: str) -> str:
    """Return the whole text of one stored value, for "show all"; 404 for an unknown field.

    Raise TooBigToShow for a value above SHOW_ALL_BYTES, which was not read.
    """
    record = detail.record
    if detail.damaged:
        raise Http404(detail.damaged)
    for name in raw_fields(field):
        if refused := _refused(detail, name):
            raise TooBigToShow(
                f"Task {detail.id!r} stores {name} of {byte_size(detail.unread[name])}, so "
                f"it was not read. {refused}."
            )
    kind, _, number = field.partition(":")
    if field == "payload" and "payload" in record:
        return pretty_json(record["payload"])
    if field in ("args", "kwargs"):
        payload, _ = _payload(record)
        indent = len(record.get("payload", "")) <= INDENT_CHARS
        return pretty_value(payload.get(field, [] if field == "args" else {}), indent=indent)
    if field == "result" and "result" in record:
        return pretty_json(record["result"])
    if kind in ("error", "traceback") and f"error:{number}" in record:
        error = parse_error(record[f"error:{number}"])
        return error.traceback if kind == "traceback" else pretty_json(record[field])
    raise Http404(f"Task {detail.id!r} stores no value {field!r}.")


def raw_response(text: str) -> HttpResponse | StreamingHttpResponse:
    """Serve stored text as plain text: the browser never reads it as HTML or script.

    A long text is escaped and sent a chunk at a time, not copied whole twice more.
    """
    content_type = "text/plain; charset=utf-8"
    response: HttpResponse | StreamingHttpResponse
    if len(text) > STREAM_CHUNK_CHARS:
        chunks = range(0, len(text), STREAM_CHUNK_CHARS)
        sent = (printable(text[at : at + STREAM_CHUNK_CHARS]) for at in chunks)
        response = StreamingHttpResponse(sent, content_type=content_type)
    else:
        response = HttpResponse(printable(text), content_type=content_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response
