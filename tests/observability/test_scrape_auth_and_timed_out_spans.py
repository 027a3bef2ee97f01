"""Metrics tokens no scraper can send, the bearer scheme in any case, and run spans of
timed-out tasks."""

import json
import re
import textwrap
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.conf.settings import read_settings
from tests.support import Command, run_to_completion, wait_until
from tests.worker import tasks

URL = "/threadmill/metrics"
TOKEN = "s3cret-token-for-the-scraper"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"metrics_token": TOKEN}


@pytest.mark.parametrize(
    "token",
    [
        f"{TOKEN}\n",
        f" {TOKEN}",
        f"{TOKEN}\t",
        "päss-wörd-for-the-scraper",
        "token\x00for-the-scraper",
    ],
)
def test_a_token_no_authorization_header_can_carry_is_refused_at_settings(token: str) -> None:
    """A token read from a file kept its newline (or held a non-ASCII letter): it was accepted,
    and every scrape got 403, since a scraper trims the newline (Prometheus' credentials_file)
    and a server hands non-ASCII header bytes over as Latin-1. The message leaves the secret
    out."""
    message = (
        "OPTIONS['metrics_token'] has whitespace at an end or a character that is not "
        "printable ASCII: no Authorization header carries it as written, so every scrape "
        "would be refused. Use printable ASCII with nothing to strip (e.g. "
        "secrets.token_urlsafe()); strip a token read from a file."
    )
    with pytest.raises(ImproperlyConfigured, match=f"^{re.escape(message)}$"):
        read_settings("default", {"OPTIONS": {"metrics_token": token}})


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "BeArEr"])
def test_the_bearer_scheme_is_read_whatever_its_case(
    backend: ThreadmillTaskBackend, scheme: str
) -> None:
    """HTTP's auth schemes are case-insensitive; "bearer <token>" was asked to send a token."""
    response = Client().get(URL, headers={"Authorization": f"{scheme} {TOKEN}"})
    assert response.status_code == 200
    assert b"threadmill_queue_tasks" in response.content


# A burst worker in this process (--processes 0) with the OpenTelemetry SDK, printing each span
# as it ends, and a task timeout the test's task outlives.
SPAN_PRINTING_WORKER = textwrap.dedent(
    """
    import json

    from django.core.management import execute_from_command_line
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class Printed(SpanExporter):
        def export(self, spans):
            for span in spans:
                ended = {"name": span.name, "status": span.status.status_code.name,
                         "description": span.status.description,
                         "attributes": dict(span.attributes)}
                print("span-ended", json.dumps(ended), flush=True)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Printed()))
    trace.set_tracer_provider(provider)
    execute_from_command_line([
        "manage.py", "threadmill_worker", "--processes", "0", "--burst", "--task-timeout", "0.5"
    ])
    """
)
WAIT_FOR_FILE = "tests.worker.tasks.wait_for_file"


def test_the_run_span_of_a_timed_out_task_ends_when_the_worker_gives_up_on_it(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """The run span ended only when the abandoned thread's task returned: a task that hangs
    (a read without a timeout, the usual reason for --task-timeout) never showed in a trace."""
    release = tmp_path / "release"
    result = tasks.wait_for_file.enqueue(str(release))
    command = Command(redis_url, key_prefix, code=SPAN_PRINTING_WORKER)
    try:
        command.wait_for_log(f'span-ended {{"name": "run {WAIT_FOR_FILE}"')
        # The span ends as the watchdog gives up, before the ack writer writes FAILED.
        wait_until(
            lambda: backend.get_result(result.id).status == TaskResultStatus.FAILED,
            "the timed-out attempt recorded FAILED",
        )
    finally:
        release.touch()  # the abandoned thread returns; the burst worker exits
    output = run_to_completion(command)

    [line] = [line for line in output.splitlines() if f"run {WAIT_FOR_FILE}" in line]
    run = json.loads(line.removeprefix("span-ended "))
    assert run["status"] == "ERROR"
    assert run["description"].startswith("TaskTimeout: Task ")
    assert "ran longer than --task-timeout=0.5s; the worker stopped waiting" in run["description"]
    assert run["attributes"]["threadmill.outcome"] == "failed"
    assert "Calling end() on an ended span" not in output
