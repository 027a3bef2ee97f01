"""An error the task's own ``unique_key`` raises keeps its type in ``enqueue_many``, as in
``enqueue``, with a note naming the call (docs/enqueue.md, Bulk enqueue). One that was a
``ValueError`` or ``TypeError`` subclass (``json.JSONDecodeError``, a project's own) was rebuilt as
a plain ``ValueError`` or ``TypeError``, as the refusals of the backend's own checks are, so an
``except`` for it around ``enqueue_many`` missed it."""

import json
from datetime import timedelta
from typing import Any

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.task import task

PATH = "tests.unique.test_a_unique_key_error_keeps_its_type_in_enqueue_many.sync_order"


class UnknownShop(TypeError):
    """A project's own error, raised by its key function."""


def by_order(args: list[Any], kwargs: dict[str, Any]) -> str:
    """The key: the order's id read from its JSON, for a known shop only."""
    if args[0] == "closed":
        raise UnknownShop("shop 'closed' is not served")
    return str(json.loads(args[1])["id"])


@task(unique_for=timedelta(minutes=5), unique_key=by_order)
def sync_order(shop: str, order_json: str) -> None:
    """A unique task keyed by the order's id."""


@pytest.mark.parametrize(
    ("bad", "error"),
    [(("main", "{not json"), json.JSONDecodeError), (("closed", "{}"), UnknownShop)],
    ids=["a library's error", "the project's own"],
)
def test_the_error_keeps_its_type_and_names_the_call(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    key_prefix: str,
    bad: tuple[str, str],
    error: type[Exception],
) -> None:
    with pytest.raises(error) as alone:
        sync_order.enqueue(*bad)
    calls = [(("main", '{"id": 1}'), {}), (bad, {})]
    with pytest.raises(error) as raised:
        backend.enqueue_many(sync_order, calls)
    assert str(raised.value) == str(alone.value)
    assert raised.value.__notes__ == [
        f"Call 1 (counting from 0) of enqueue_many() for task {PATH!r} was refused, so none "
        "of its 2 calls were stored."
    ]
    assert list(redis_client.scan_iter(f"{key_prefix}:*")) == []
