"""Stop the steps a workflow ended without, wherever they are: waiting, or held by a worker."""

from collections.abc import Sequence

from ..backend import ThreadmillTaskBackend
from ..broker.workflows import StoppedStep
from ..codec.results import error_json
from ..codec.times import now_ms
from ..exceptions import Cancelled


def stop_steps(backend: ThreadmillTaskBackend, steps: Sequence[tuple[str, StoppedStep]]) -> None:
    """Cancel each (task id, stop) of ``steps`` that still waits in its queue, and note on its
    record why its workflow stopped it, held by a worker or not (docs/workflows.md, Cancel):
    one round trip for them all, however many steps a group holds.

    A worker reads the workflow before it starts a step, or retries one, but the workflow's
    hash expires ``result_ttl`` after it ended, sooner than a step in a busy worker's buffer,
    or a retry, may wait: the record, which never expires while the step is pending, still
    says so then. A step that ended or expired meanwhile is left as it is.
    """
    # Formatted once per reason: a group's steps share one.
    reasons = {stopped.reason for _, stopped in steps}
    errors = {reason: error_json(Cancelled.before_it_ran(reason)) for reason in reasons}
    cancels = [(task_id, errors[stopped.reason], stopped) for task_id, stopped in steps]
    backend.broker.cancel_each(cancels, now_ms())
