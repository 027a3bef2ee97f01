"""Stop a step its workflow ended without, wherever it is: waiting, or held by a worker."""

from ..backend import ThreadmillTaskBackend
from ..broker.workflows import StoppedStep
from ..codec.results import error_json
from ..codec.times import now_ms
from ..exceptions import Cancelled


def stop_step(backend: ThreadmillTaskBackend, task_id: str, stopped: StoppedStep) -> None:
    """Cancel step ``task_id`` if it still waits in its queue, and note on its record why its
    workflow stopped it, held by a worker or not (docs/workflows.md, Cancel).

    A worker reads the workflow before it starts a step, or retries one, but the workflow's
    hash expires ``result_ttl`` after it ended, sooner than a step in a busy worker's buffer,
    or a retry, may wait: the record, which never expires while the step is pending, still
    says so then. A step that ended or expired meanwhile is left as it is.
    """
    error = error_json(Cancelled.before_it_ran(stopped.reason))
    backend.broker.cancel(task_id, error, now_ms(), stopped)
