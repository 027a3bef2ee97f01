"""A workflow whose step waits for its retry still reads as running, from get_workflow() and
on its admin page (docs/workflows.md, The API)."""

import pytest

from django_threadmill.admin import workflows
from django_threadmill.aliases import sources
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.task import task
from django_threadmill.testing import drain
from django_threadmill.workflows import chain, get_workflow, step

from .tasks import IN_AN_HOUR, add


@task(retry=IN_AN_HOUR)
def fails_for_later(n: int) -> int:
    """Fail, under a policy that tries again in an hour."""
    raise ValueError(f"fails, tried again later with {n}")


def test_a_workflow_whose_step_waits_for_its_retry_reads_running(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step's task reads READY while its retry waits, and the workflow read READY with
    it, "before any step started", going back from RUNNING; so did the admin's page of
    steps that shows other steps than that one."""
    monkeypatch.setattr(workflows, "STEPS_PER_PAGE", 1)
    flow = chain(step(fails_for_later, 1), step(add, 1)).enqueue()
    assert flow.status == TaskResultStatus.READY

    assert drain(wait_for_delayed=0) == 1  # the first attempt, which fails

    found = get_workflow(flow.id)
    assert [s.state for s in found.steps] == ["READY", "WAITING"]
    first = found.results[0]
    assert first is not None
    assert len(first.errors) == 1
    assert found.status == TaskResultStatus.RUNNING
    [source] = sources()
    for page in ("1", "2"):  # the page of step 0, and one without it
        assert workflows.workflow_context(source, flow.id, page)["status"] == "RUNNING"
