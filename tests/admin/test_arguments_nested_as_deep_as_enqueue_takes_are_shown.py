"""A task's page shows arguments nested as deep as enqueue takes them, and "Show all" serves them.

The page decodes the payload in C, then encoded its arguments again with an indent, which json
does in Python, one frame per level: arguments an enqueue took from a shallower stack than the
view's (about 950 levels from a script's) raised a bare ``RecursionError`` under the admin's
middleware, and the task page and its "Show all" answered 500, where ``get_result`` reads them
back (tests/backend/test_nested_values_read_back.py).
"""

import json
import re

from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import echo
from tests.admin.conftest import detail_url, page


def nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def enqueued_as_deep_as_taken(backend: ThreadmillTaskBackend) -> tuple[str, list[object]]:
    """Enqueue the deepest value enqueue takes from this stack, as a script or a task would."""
    for depth in range(1000, 0, -10):
        value = nested(depth)
        try:
            return backend.enqueue(echo, (value,), {"key": value}).id, value
        except TypeError as refused:
            if "nested too deeply" not in str(refused):
                raise
    raise AssertionError("enqueue took no nested value")


def test_arguments_nested_as_deep_as_enqueue_takes_are_shown_and_served(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id, value = enqueued_as_deep_as_taken(backend)
    assert backend.get_result(task_id).args == [value]

    body = page(operator, detail_url(task_id))

    assert "<td>testproject.example.tasks.echo</td>" in body
    # Shown on one line where json cannot indent so deep (3.12), indented where it can (3.13).
    assert re.search(r"(\[\s*){8}", body)
    for field, stored in (("args", [value]), ("kwargs", {"key": value})):
        served = operator.get(f"{detail_url(task_id)}raw/{field}/")
        assert served.status_code == 200
        assert json.loads(b"".join(served)) == stored
