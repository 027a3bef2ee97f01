"""OpenTelemetry spans around each enqueue and each execution (the ``otel`` extra, API only).

The enqueue span's context travels in the task's payload (``"trace"``, W3C trace context
written by the client, so no Lua reads it), and the execution span links to it: a trace
viewer goes from the request that enqueued to the run, however long the task waited. A failed
attempt's run span names its exception (``record_failure``, called where every failed outcome
is built). A workflow is one trace: its launch span's context is kept in its hash too, a
drainer's enqueue span of each later step is a child of it, and a step's run span is a child
of the span that enqueued it (docs/observability.md, Workflows). Without opentelemetry-api the
decorators hand back the function they were given: no cost; with the API but no SDK they call
it straight away. A tracer that raises (a span processor, sampler or propagator of the
project's SDK) is logged and left out: it fails no enqueue and no task.
"""

import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from functools import wraps
from typing import TYPE_CHECKING, Any, cast

from ..codec.ids import read_step_marker
from ..codec.results import error_text
from ..compat import Task

try:  # tried once, at import: the extra is optional
    from opentelemetry import propagate, trace
except ImportError:  # pragma: no cover - the test extra installs it
    trace = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from ..broker import Finish, Lease, Reservation
    from ..compat import TaskResult
    from ..exceptions import TaskTimeout

logger = logging.getLogger(__name__)

TRACER_NAME = "django_threadmill"
CARRIER_KEY = "trace"  # payload key of the enqueuing span's context
ATTRIBUTE_PREFIX = "threadmill."
WORKFLOW_SPAN = "enqueue workflow"  # the span of a workflow's launch
_sdk_seen = False  # set once a real tracer provider is found: one can never be unset
# The most characters of a failed run span's status description: a trace viewer shows it in a
# list, where the whole message (up to MAX_ERROR_TEXT_CHARS) is the exception event's.
MAX_DESCRIPTION_CHARS = 200


@dataclass(slots=True)
class _OpenRun:
    """An attempt's run span, and the status description of the error it failed with."""

    span: Any
    failure: str | None = None  # "<exception type>: <message>", once recorded


# The run span of each attempt running, by its lease: the worker records a failed attempt's
# error on it (record_failure), and a sync attempt's thread and the watchdog that gives up on
# it both end it, whichever comes first.
_open_runs: dict["Lease", _OpenRun] = {}


def _tracing() -> bool:
    """Tell whether a tracer provider (an SDK) is set.

    Without one every span is the API's no-op, yet opening one costs tens of µs per task, so
    the wrappers skip it; once a provider is seen the answer is cached.
    """
    global _sdk_seen
    if not _sdk_seen:
        _sdk_seen = not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    return _sdk_seen


type Enqueued = "TaskResult | list[TaskResult]"  # what enqueue and enqueue_many return
type Enqueue = Callable[..., Enqueued]
type AsyncEnqueue = Callable[..., Awaitable["TaskResult"]]
type Run = Callable[..., "Finish | None"]  # (executor, reservation, started_ms, claim=...)
type AsyncRun = Callable[[Any, "Reservation", int], Awaitable["Finish"]]
type TimedOut = Callable[[Any, "Reservation", int, "TaskTimeout"], "Finish"]
type Launch = Callable[[Any], Any]  # workflows/launch.py: (root) -> WorkflowResult


def _attributes(path: str, queue: str, **more: str | int) -> dict[str, str | int]:
    names = {"task.path": path, "queue": queue, **{k.replace("_", "."): v for k, v in more.items()}}
    return {ATTRIBUTE_PREFIX + name: value for name, value in names.items()}


def carrier() -> dict[str, str]:
    """Return the current span's context to store with a task ({} without OpenTelemetry)."""
    if trace is None or not _tracing():
        return {}
    found: dict[str, str] = {}
    try:
        propagate.inject(found)
    except Exception:
        _log_failure("storing the enqueue span's context")
        return {}
    return found


def _log_failure(doing: str) -> None:
    logger.error(
        "OpenTelemetry raised while %s: the enqueue or task goes on untraced. Fix the span "
        "processor, sampler or propagator of the tracer provider the project set",
        doing,
        exc_info=True,
    )


@contextmanager
def _guarded(open_span: Callable[[], AbstractContextManager[Any]], name: str) -> Iterator[Any]:
    """Run the block in the span ``open_span`` opens (``name``, for the log): without one if
    opening it raises, and on if closing it raises; whatever the block raises passes as is."""
    try:
        opened = open_span()
        span = opened.__enter__()
    except Exception:
        _log_failure(f"opening the span {name!r}")
        yield trace.INVALID_SPAN  # takes attributes and an end, and keeps none
        return
    try:
        yield span
    except BaseException as exc:
        _close(opened, name, exc)
        raise
    _close(opened, name, None)


def _close(opened: AbstractContextManager[Any], name: str, raised: BaseException | None) -> None:
    """Leave a span's context, with the exception its block ``raised`` if any."""
    try:
        if raised is None:
            opened.__exit__(None, None, None)
        else:
            opened.__exit__(type(raised), raised, raised.__traceback__)
    except Exception as failure:
        if failure is not raised:
            _log_failure(f"ending the span {name!r}")


def _enqueue_span(task: "Task") -> AbstractContextManager[Any]:
    name = f"enqueue {task.module_path}"
    return _guarded(
        lambda: trace.get_tracer(TRACER_NAME).start_as_current_span(
            name,
            kind=trace.SpanKind.PRODUCER,
            attributes=_attributes(task.module_path, task.queue_name),
        ),
        name,
    )


def _describe(span: Any, enqueued: Enqueued) -> None:
    """Name what was enqueued on its span: the task id, or how many tasks enqueue_many made."""
    if isinstance(enqueued, list):
        span.set_attribute(ATTRIBUTE_PREFIX + "task.count", len(enqueued))
    else:
        span.set_attribute(ATTRIBUTE_PREFIX + "task.id", enqueued.id)


def _traced_task(args: tuple[Any, ...], kwargs: dict[str, Any]) -> "Task | None":
    """Return the task an enqueue is called with, by position or by keyword (Django's own
    ``aenqueue`` passes ``task=``), when a span is to be opened for it; else None.

    Not a task: the wrapped call refuses it with its own error (``validate_task``).
    """
    task = args[0] if args else kwargs.get("task")
    return task if isinstance(task, Task) and _tracing() else None


def traced_enqueue[E: Enqueue](enqueue: E) -> E:
    """Wrap a backend's ``enqueue`` or ``enqueue_many`` in a producer span named after the
    task; the tasks it stores carry that span's context."""
    if trace is None:
        return enqueue

    @wraps(enqueue)
    def traced(backend: Any, *args: Any, **kwargs: Any) -> Enqueued:
        task = _traced_task(args, kwargs)
        if task is None:
            return enqueue(backend, *args, **kwargs)
        with _enqueue_span(task) as span:
            enqueued = enqueue(backend, *args, **kwargs)
            _describe(span, enqueued)
            return enqueued

    return cast(E, traced)  # called as ``enqueue`` is, returning what it returns


def traced_aenqueue[E: AsyncEnqueue](aenqueue: E) -> E:
    """Async twin of ``traced_enqueue``."""
    if trace is None:
        return aenqueue

    @wraps(aenqueue)
    async def traced(backend: Any, *args: Any, **kwargs: Any) -> "TaskResult":
        task = _traced_task(args, kwargs)
        if task is None:
            return await aenqueue(backend, *args, **kwargs)
        with _enqueue_span(task) as span:
            result = await aenqueue(backend, *args, **kwargs)
            _describe(span, result)
            return result

    return cast(E, traced)  # called as ``aenqueue`` is, returning what it returns


def traced_launch[L: Launch](launch: L) -> L:
    """Wrap a workflow's launch in a producer span ``enqueue workflow``: its first steps, and
    the workflow's hash (for the later ones, ``enqueue_step_span``), carry its context."""
    if trace is None:
        return launch

    @wraps(launch)
    def traced(root: Any) -> Any:
        if not _tracing():
            return launch(root)
        with _guarded(
            lambda: trace.get_tracer(TRACER_NAME).start_as_current_span(
                WORKFLOW_SPAN, kind=trace.SpanKind.PRODUCER
            ),
            WORKFLOW_SPAN,
        ) as span:
            launched = launch(root)
            span.set_attribute(ATTRIBUTE_PREFIX + "workflow.id", launched.id)
            span.set_attribute(ATTRIBUTE_PREFIX + "task.count", len(launched.steps))
            return launched

    return cast(L, traced)  # called as ``launch`` is, returning what it returns


def stored_carrier() -> str | None:
    """Return the current span's context as the JSON a workflow's hash keeps (``trace``),
    or None when there is none to keep (no OpenTelemetry, no SDK, no span)."""
    found = carrier()
    return json.dumps(found, separators=(",", ":")) if found else None


def enqueue_step_span(
    launch: str | None, path: str, queue: str, *, task_id: str, workflow_id: str, step: int
) -> AbstractContextManager[Any]:
    """Open the producer span of a workflow step a drainer enqueues, a child of the span that
    launched the workflow (``launch``: the hash's ``trace``), whatever span is current; the
    step carries its context. Nothing when the workflow was launched untraced, as before."""
    if trace is None or launch is None or not _tracing():
        return nullcontext()
    try:
        launched = _read_carrier(json.loads(launch))
    except (ValueError, RecursionError):  # not written by a launch: the step goes untraced
        launched = None
    if launched is None:
        return nullcontext()
    name = f"enqueue {path}"
    return _guarded(
        lambda: trace.get_tracer(TRACER_NAME).start_as_current_span(
            name,
            context=_child_of(launched),
            kind=trace.SpanKind.PRODUCER,
            attributes=_attributes(
                path, queue, task_id=task_id, workflow_id=workflow_id, workflow_step=step
            ),
        ),
        name,
    )


def _links(payload: str) -> list[Any]:
    """Return a link to the enqueuing span stored in ``payload``, if there is one.

    A stored context that is not ours (another producer, a hand-written record) links to
    nothing: the propagator takes text headers only (a number makes it raise), and this runs
    in the worker thread before the task does.
    """
    context = _enqueued_by(payload)
    return [] if context is None else [trace.Link(context)]


def _enqueued_by(payload: str) -> Any | None:
    """Return the span context of the enqueue stored in ``payload``, None when there is none
    or it cannot be read (``_links``)."""
    if f'"{CARRIER_KEY}":' not in payload:
        return None
    try:
        stored = json.loads(payload).get(CARRIER_KEY)
    except (ValueError, AttributeError, RecursionError):  # the executor says what is wrong
        return None
    return _read_carrier(stored)


def _child_of(span_context: Any | None) -> Any | None:
    """Return the context a span opened as a child of ``span_context`` is given (None: the
    current one)."""
    if span_context is None:
        return None
    return trace.set_span_in_context(trace.NonRecordingSpan(span_context))


def _read_carrier(stored: object) -> Any | None:
    """Return the valid span context in a stored carrier (text headers only), else None.

    A propagator that raises (the project's) is logged and links to nothing: this runs in the
    worker thread before the task does, and in the drainer before a step is enqueued.
    """
    if not isinstance(stored, dict):
        return None
    headers = {name: value for name, value in stored.items() if isinstance(value, str)}
    try:
        context = trace.get_current_span(propagate.extract(headers)).get_span_context()
    except Exception:
        _log_failure("reading the trace context stored with the task")
        return None
    return context if context.is_valid else None


def _execution_span(
    reservation: "Reservation", *, end_on_exit: bool = True
) -> AbstractContextManager[Any]:
    lease = reservation.lease
    name = f"run {lease.task_path}"
    step = read_step_marker(reservation.workflow)
    of_step: dict[str, str | int] = (
        {} if step is None else {"workflow_id": step[0], "workflow_step": step[1]}
    )
    attributes = _attributes(
        lease.task_path,
        lease.queue,
        task_id=lease.task_id,
        attempt=len(reservation.workers) + 1,
        **of_step,
    )
    if step is None:
        context, links = None, _links(reservation.payload)
    else:  # in its workflow's trace, a child of its enqueue (docs/observability.md, Workflows)
        context, links = _child_of(_enqueued_by(reservation.payload)), []
    return _guarded(
        lambda: trace.get_tracer(TRACER_NAME).start_as_current_span(
            name,
            context=context,
            kind=trace.SpanKind.CONSUMER,
            links=links,
            attributes=attributes,
            end_on_exit=end_on_exit,
        ),
        name,
    )


def record_failure(lease: "Lease", error: BaseException, traceback: str) -> None:
    """Record the exception a failed attempt ended with on its run span: an ``exception``
    event with ``traceback`` (the one stored with the attempt, already cut to size), and the
    type and start of its message for the span's ERROR status. No run span open for ``lease``
    (no SDK, or the reaper's attempt): nothing to do."""
    run = _open_runs.get(lease)
    if run is None:
        return
    run.failure = f"{type(error).__name__}: {error_text(error, MAX_DESCRIPTION_CHARS)}"
    try:
        run.span.record_exception(
            error,
            attributes={"exception.message": error_text(error), "exception.stacktrace": traceback},
        )
    except Exception:
        _log_failure(f"recording the exception on the span 'run {lease.task_path}'")


def _record_outcome(run: _OpenRun, finish: "Finish | None") -> None:
    """Put the attempt's outcome on its span; None: the watchdog ended it (timed out)."""
    outcome = "failed" if finish is None else finish.outcome.value
    run.span.set_attribute(ATTRIBUTE_PREFIX + "outcome", outcome)
    if outcome != "successful":
        run.span.set_status(trace.StatusCode.ERROR, run.failure)


def _end_run(lease: "Lease", finish: "Finish | None", *, raised: bool = False) -> None:
    """End the run span of ``lease``'s attempt once, with its outcome (or the exception the
    run raised, which the span holds already); a second call does nothing."""
    run = _open_runs.pop(lease, None)
    if run is None:
        return
    try:
        if not raised:
            _record_outcome(run, finish)
        run.span.end()
    except Exception:
        _log_failure(f"ending the span 'run {lease.task_path}'")


@contextmanager
def _open_run(reservation: "Reservation") -> Iterator[None]:
    """Run the block in the attempt's run span, kept open by lease for ``_end_run``; an
    exception out of the block (drain()'s Ctrl-C) ends the span at once, holding it."""
    lease = reservation.lease
    try:
        with _execution_span(reservation, end_on_exit=False) as span:
            _open_runs[lease] = _OpenRun(span)
            yield
    except BaseException:
        _end_run(lease, None, raised=True)
        raise


def traced_execution(run: Run) -> Run:
    """Wrap an executor's ``run(reservation, started_ms, ...)`` in a consumer span linked to
    the enqueue; it records the attempt and its outcome.

    An attempt the watchdog gives up on has its span ended then (``traced_timeout``): its
    thread may never return.
    """
    if trace is None:
        return run

    @wraps(run)
    def traced(
        executor: Any, reservation: "Reservation", started_ms: int, **options: Any
    ) -> "Finish | None":
        if not _tracing():
            return run(executor, reservation, started_ms, **options)
        with _open_run(reservation):
            finish = run(executor, reservation, started_ms, **options)
        _end_run(reservation.lease, finish)
        return finish

    return traced


def traced_timeout(timed_out: TimedOut) -> TimedOut:
    """Wrap an executor's ``timed_out``, the watchdog's: the abandoned attempt's run span ends
    now, as failed, not when (if ever) its thread returns."""
    if trace is None:
        return timed_out

    @wraps(timed_out)
    def traced(
        executor: Any, reservation: "Reservation", started_ms: int, error: "TaskTimeout"
    ) -> "Finish":
        finish = timed_out(executor, reservation, started_ms, error)
        _end_run(reservation.lease, None)
        return finish

    return traced


def traced_aexecution(arun: AsyncRun) -> AsyncRun:
    """Async twin of ``traced_execution``, for the event loop's ``arun``."""
    if trace is None:
        return arun

    @wraps(arun)
    async def traced(executor: Any, reservation: "Reservation", started_ms: int) -> "Finish":
        if not _tracing():
            return await arun(executor, reservation, started_ms)
        with _open_run(reservation):
            finish = await arun(executor, reservation, started_ms)
        _end_run(reservation.lease, finish)
        return finish

    return traced
