"""Bad arguments to the public Python API: each is refused where it is passed, naming the value
and the fix, and changes nothing; none is read as another value, or fails deep inside."""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import ImproperlyConfiguredThreadmill
from django_threadmill.testing import drain
from django_threadmill.workflows import Step, get_workflow
from testproject.example.tasks import add, echo

from .backend_support import new_task, succeed


def ready_ids(broker: Broker) -> list[str]:
    return broker.client.zrange(broker.queue_keys("default").ready, 0, -1)


def test_a_purge_of_a_queue_the_backend_has_not_is_refused_naming_those_it_has(
    backend: ThreadmillTaskBackend,
) -> None:
    """A misspelt queue returned 0, as a queue with nothing to delete."""
    done = echo.enqueue("kept").id
    succeed(backend, done, "kept")
    backend.broker.enqueue("legacy", [new_task("legacy")])  # a queue since left out of QUEUES
    with pytest.raises(
        ImproperlyConfiguredThreadmill,
        match=r"^Queue 'defualt' is not in TASKS\['default'\]\['QUEUES'\] \(default, emails and "
        r"reports\) nor one Redis knows \(legacy\)\. Add it there or pick one of those\.$",
    ):
        backend.purge_finished("defualt")
    assert backend.get_result(done).status == TaskResultStatus.SUCCESSFUL
    assert backend.purge_finished("legacy") == 0  # one Redis knows is purged, as in the admin
    assert backend.purge_finished("default") == 1


@pytest.mark.parametrize("status", ["successful", 5])
def test_a_purge_status_that_names_no_status_is_not_called_unfinished(
    backend: ThreadmillTaskBackend, status: object
) -> None:
    with pytest.raises(
        ValueError,
        match=rf"^purge_finished\(status={status!r}\) names no task status\. Pass "
        r"TaskResultStatus\.SUCCESSFUL, TaskResultStatus\.FAILED or None for both\.$",
    ):
        backend.purge_finished("default", status)  # type: ignore[arg-type]


BAD_CALLS = [
    pytest.param("12", {}, "args='12', a str, and kwargs={}, a dict", id="str-args"),
    pytest.param({"a": 1, "b": 2}, {}, "args={'a': 1, 'b': 2}, a dict", id="dict-args"),
    pytest.param(None, {}, "args=None, a NoneType", id="none-args"),
    pytest.param((1, 2), None, "kwargs=None, a NoneType", id="none-kwargs"),
]


@pytest.mark.parametrize(("args", "kwargs", "named"), BAD_CALLS)
def test_enqueue_refuses_args_that_are_no_tuple_or_list_and_kwargs_no_dict(
    backend: ThreadmillTaskBackend, broker: Broker, args: object, kwargs: object, named: str
) -> None:
    """A str was stored as its letters (add("1", "2") ran and returned "12"), a dict as its
    keys; None failed deep inside with "'NoneType' object is not iterable"."""
    with pytest.raises(TypeError, match=r"^enqueue\(\) takes args as a tuple or list and ") as e:
        backend.enqueue(add, args, kwargs)  # type: ignore[arg-type]
    assert named in str(e.value)
    assert str(e.value).endswith(
        "Pass e.g. backend.enqueue(task, (1, 2), {'c': 3}), or call task.enqueue(1, 2, c=3)."
    )
    assert ready_ids(broker) == []


@pytest.mark.parametrize(("args", "kwargs", "named"), BAD_CALLS)
async def test_aenqueue_refuses_them_too(
    backend: ThreadmillTaskBackend, broker: Broker, args: object, kwargs: object, named: str
) -> None:
    with pytest.raises(TypeError, match=r"^enqueue\(\) takes args as a tuple or list and "):
        await backend.aenqueue(add, args, kwargs)  # type: ignore[arg-type]
    assert ready_ids(broker) == []


def test_a_step_built_directly_refuses_args_that_are_no_tuple_or_list() -> None:
    """Step(add, "12") ran add("1", "2"), as backend.enqueue did."""
    with pytest.raises(
        TypeError,
        match=r"^Step\(\) takes args as a tuple or list and kwargs as a dict, not args='12' and "
        r"kwargs=\{\}\. Write step\(task, \*args, \*\*kwargs\) instead\.$",
    ):
        Step(add, "12")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"not args=\(1, 2\) and kwargs=None\. Write step"):
        Step(add, (1, 2), None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reason", "error", "message"),
    [
        pytest.param(
            b"why", TypeError, r"^cancel\(\) reason=b'why' is a bytes\. Pass a str\.$", id="bytes"
        ),
        pytest.param(
            None, TypeError, r"^cancel\(\) reason=None is a NoneType\. Pass a str\.$", id="none"
        ),
        pytest.param(
            "lone \ud800",
            ValueError,
            r"^cancel\(\) reason holds '\\ud800' at index 5, a lone",
            id="surrogate",
        ),
    ],
)
def test_cancel_takes_a_reason_that_is_text(
    backend: ThreadmillTaskBackend, reason: object, error: type[Exception], message: str
) -> None:
    """Checked as a workflow's cancel checks it: bytes were stored as "b'why'"."""
    task_id = echo.enqueue(1).id
    with pytest.raises(error, match=message):
        backend.cancel(task_id, reason)  # type: ignore[arg-type]
    assert backend.get_result(task_id).status == TaskResultStatus.READY


def test_drain_refuses_queues_that_are_no_list(backend: ThreadmillTaskBackend) -> None:
    """Failed with "'int' object is not iterable"."""
    with pytest.raises(
        TypeError,
        match=r"^queues=5 is an int, not a list of queue names\. Pass a list, e\.g\. "
        r"queues=\['default'\], or None for every queue in QUEUES\.$",
    ):
        drain(queues=5)  # type: ignore[arg-type]


def test_a_backend_given_by_other_than_its_alias_is_refused_naming_the_alias(
    backend: ThreadmillTaskBackend,
) -> None:
    """A list failed as "unhashable type: 'list'"; the backend itself, as no such alias."""
    with pytest.raises(
        TypeError,
        match=r"^A backend is named by its alias in TASKS, a str, not a list: \['default'\]\. "
        r"Pass e\.g\. 'default'\.$",
    ):
        get_workflow("0" * 32, backend=["default"])  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"not a ThreadmillTaskBackend: <.*>\. Pass e\.g\. 'default'"
    ):
        drain(backend)  # type: ignore[arg-type]
