"""A step that cannot be enqueued is logged on one line: the line breaks of why (the message its
task's module raised as it was imported, text from outside) are escaped (``\\x0a``), as on a
task's failure line. They ended the "Workflow step cannot be enqueued" line and wrote the rest as
lines of their own, read as the package's."""

import json
import logging

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.testing import drain
from django_threadmill.workflows import chain, step

from .tasks import add, number

PATH = "tests.workflows.raises_a_message_of_several_lines_at_import.task"


def test_the_module_s_message_is_escaped_on_the_line(
    backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    key = backend.broker.keyspace.workflow(flow.id)
    stored = json.loads(backend.broker.client.hget(key, "p:1"))
    backend.broker.client.hset(key, "p:1", json.dumps({**stored, "path": PATH}))

    with caplog.at_level(logging.ERROR, logger="django_threadmill.workflows.advance"):
        drain()

    [line] = [
        record.getMessage()
        for record in caplog.records
        if record.getMessage().startswith("Workflow step cannot be enqueued")
    ]
    assert line.splitlines() == [line]
    assert (
        "(its module raised RuntimeError: API_KEY is not set\\x0aERROR forged line"
        "\\xe2\\x80\\xa8ERROR another forged line)"
    ) in line
