"""The workflow pages: the newest workflows of each backend, and one workflow's steps."""

import pytest
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.testing import drain
from django_threadmill.workflows import chain, group, step
from tests.admin.conftest import TASKS_URL
from tests.workflows.support import (
    GONE_PATH,
    renamed_away,
    reserved_while_stored,
    stop_before_it_starts,
)
from tests.workflows.tasks import add, boom, number

WORKFLOWS_URL = f"{TASKS_URL}workflows/"


def test_the_list_shows_each_workflow_with_its_status(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    done = chain(step(number, 1), step(add, 1)).enqueue()
    drain()
    waiting = chain(step(number, 2), step(add, 2)).enqueue()

    page = operator.get(WORKFLOWS_URL).content.decode()

    assert page.index(waiting.id) < page.index(done.id)  # newest first
    assert f'href="{WORKFLOWS_URL}default/{done.id}/"' in page
    assert '<td class="num">2 of 2</td>' in page
    assert '<td class="num">0 of 2</td>' in page
    assert ">SUCCESSFUL</span>" in page
    assert ">OPEN</span>" in page


def test_a_workflow_page_shows_its_steps_states_and_links(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    flow = chain(step(number, 1), step(boom), step(add, 1)).enqueue()
    drain()
    flow.refresh()

    page = operator.get(f"{WORKFLOWS_URL}default/{flow.id}/").content.decode()

    assert f'href="{TASKS_URL}default/{flow.steps[0].task_id}/"' in page
    assert f'href="{TASKS_URL}default/{flow.steps[1].task_id}/"' in page
    assert f"{TASKS_URL}default/{flow.steps[2].task_id}/" not in page  # never enqueued
    assert ">SUCCESSFUL</span>" in page
    assert ">FAILED</span>" in page
    assert ">NOT_RUN</span>" in page
    assert "the value of step 1" in page
    assert "step 1 failed: ValueError: boom after 1" in page


def test_a_step_whose_task_no_longer_imports_shows_with_its_state_and_why(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    """The page answered 500 (TaskNotImportable) for the whole workflow."""
    flow = group(step(number, 1), step(number, 2)).enqueue()
    renamed_away(backend, flow, 0)

    response = operator.get(f"{WORKFLOWS_URL}default/{flow.id}/")

    assert response.status_code == 200
    page = response.content.decode()
    assert f'href="{TASKS_URL}default/{flow.steps[0].task_id}/">{GONE_PATH}</a>' in page
    assert f'href="{TASKS_URL}default/{flow.steps[1].task_id}/"' in page
    assert f"Task path &#x27;{GONE_PATH}&#x27; does not import" in page
    assert page.count(">READY</span>") == 2


def test_an_unknown_workflow_is_a_404(operator: Client, backend: ThreadmillTaskBackend) -> None:
    assert operator.get(f"{WORKFLOWS_URL}default/nope/").status_code == 404
    assert operator.get(f"{WORKFLOWS_URL}elsewhere/nope/").status_code == 404


def test_a_damaged_workflow_is_a_404_and_the_list_still_shows(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    backend.broker.client.hset(backend.broker.keyspace.workflow(flow.id), "p:1", "{not json")
    assert operator.get(f"{WORKFLOWS_URL}default/{flow.id}/").status_code == 404
    assert flow.id in operator.get(WORKFLOWS_URL).content.decode()


def test_a_step_links_to_its_workflow_and_the_task_list_to_the_workflows(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    flow = chain(step(number, 1), step(add, 1)).enqueue()

    page = operator.get(f"{TASKS_URL}default/{flow.steps[0].task_id}/").content.decode()
    listing = operator.get(TASKS_URL).content.decode()

    assert f'href="{WORKFLOWS_URL}default/{flow.id}/" id="tm-workflow"' in page
    assert "(step 0)" in page
    assert f'href="{WORKFLOWS_URL}" id="tm-workflows-link"' in listing


def test_a_step_its_workflow_recorded_as_not_run_offers_no_requeue_and_says_why(
    operator: Client, backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A requeue would only have it cancelled again before it starts."""
    flow, reservation = reserved_while_stored(backend, monkeypatch)
    stop_before_it_starts(backend, reservation)

    page = operator.get(f"{TASKS_URL}default/{flow.steps[1].task_id}/").content.decode()

    assert "recorded as not run by its workflow, so this step is not requeued" in page
    assert 'id="tm-requeue"' not in page
