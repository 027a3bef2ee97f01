"""A return value JSON cannot store fails its task naming where in it the value is, as an enqueue
names it in its arguments (docs/reliability.md, Bad input).

The error named only what JSON's encoder said: "returned a dict, which is not JSON (unhashable
type: 'list')" for a dict keyed by tuples, a type the task never made (Django's normalisation
turns the tuple into a list), and "(Out of range float values are not JSON compliant: nan)" or
"(Unsupported type: <class 'datetime.datetime'>)" with no word of where, in a value of
thousands of rows.
"""

import math
from collections.abc import Callable
from datetime import UTC, datetime

from django_threadmill.compat import TaskResultStatus
from django_threadmill.task import task
from tests.support import Command

ROWS = 1000  # the bad value sits in the last row, past what a reader looks through


@task
def rows_keyed_by_pairs() -> dict[str, object]:
    return {"rows": [{"cell": {"a": 1}} for _ in range(ROWS)] + [{"cell": {(1, 2): "x"}}]}


@task
def rows_with_a_time() -> dict[str, object]:
    return {"rows": [{"at": "today"} for _ in range(ROWS)] + [{"at": datetime.now(UTC)}]}


@task
def scores_with_a_nan() -> dict[str, object]:
    return {"scores": [1.0] * ROWS + [math.nan]}


def test_a_return_value_json_cannot_store_fails_its_task_naming_where_it_is(
    start_worker: Callable[..., Command],
) -> None:
    expected = {
        rows_keyed_by_pairs: f"return value['rows'][{ROWS}]['cell'] has the key (1, 2), a tuple, "
        "not a JSON key",
        rows_with_a_time: f"return value['rows'][{ROWS}]['at'] is a datetime",
        scores_with_a_nan: f"return value['scores'][{ROWS}] is nan",
    }
    results = {made: made.enqueue() for made in expected}

    worker = start_worker("--threads", "1", "--burst")
    assert worker.wait(60) == 0, worker.log

    for made, where in expected.items():
        result = results[made]
        result.refresh()
        assert result.status == TaskResultStatus.FAILED
        [error] = result.errors
        assert error.exception_class_path == "builtins.TypeError"
        assert f"returned a dict, which is not JSON: {where} (" in error.traceback
        assert "Return strings, numbers, booleans, None, lists or dicts" in error.traceback
