"""Cancelling a workflow costs the same few round trips whatever its size.

``WorkflowResult.cancel()`` cancelled its steps still waiting one round trip each: a group of
10,000 steps held the caller (a web request) for 10,000 round trips, 10 s more at a network
round trip of 1 ms. Its steps' cancels now go as one pipeline (split by node on a Redis
Cluster), with the same outcome for each step (docs/workflows.md, What it costs).
"""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.workflows import WorkflowResult, group, step
from tests.support import round_trips

from .tasks import collect, number


def cancelled(members: int, monkeypatch: pytest.MonkeyPatch) -> tuple[WorkflowResult, int]:
    """Enqueue a group of ``members`` waiting steps (two queues) and a callback, and cancel
    it; return it and the round trips of the cancel."""
    flow = group(
        *(step(number.using(queue_name=("default", "emails")[n % 2]), n) for n in range(members)),
        then=step(collect),
    ).enqueue()
    with round_trips(monkeypatch) as writes:
        assert flow.cancel("too big")
    return flow, len(writes)


def test_cancelling_a_group_of_three_hundred_takes_the_round_trips_of_a_group_of_ten(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    cancelled(1, monkeypatch)  # the first call loads the scripts
    _, small = cancelled(10, monkeypatch)
    flow, large = cancelled(300, monkeypatch)

    assert large == small
    assert flow.status == TaskResultStatus.FAILED
    why = "Cancelled before it ran: its workflow was cancelled: too big"
    for result in flow.results[:300]:  # cancel() read them again once they were cancelled
        assert result is not None
        assert result.status == TaskResultStatus.FAILED
        assert result.errors[-1].traceback.strip().endswith(why)
    assert flow.steps[-1].not_run == "cancelled: too big"
