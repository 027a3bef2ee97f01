"""A ``unique_key`` written as ``async def`` is refused where its task is declared: enqueue
calls the key function and hashes what it returns, never awaiting it, so such a task was
declared without a word and every enqueue of it, ``aenqueue`` too, then failed with "returned
<coroutine object …>, not a string" beside a "never awaited" RuntimeWarning."""

from datetime import timedelta
from typing import Any

import pytest

from django_threadmill.compat import InvalidTask
from django_threadmill.task import task

pytestmark = pytest.mark.usefixtures("backend")


async def by_account(args: list[Any], kwargs: dict[str, Any]) -> str:
    return str(args[0])


class AsyncKey:
    async def __call__(self, args: list[Any], kwargs: dict[str, Any]) -> str:
        return str(args[0])


def sync_account(account: int) -> None:
    """A task that carries the key function."""


@pytest.mark.parametrize("key", [by_account, AsyncKey()], ids=["function", "instance"])
def test_an_async_unique_key_is_an_invalid_task_naming_the_fix(key: object) -> None:
    with pytest.raises(
        InvalidTask,
        match=(
            r"^unique_key=.* on task '.*\.sync_account' is an async function, which enqueue "
            r"never awaits: it would answer a coroutine, not a key\. Make it a plain def "
            r"unique_key\(args, kwargs\) -> str\.$"
        ),
    ):
        task(unique_for=timedelta(minutes=5), unique_key=key)(sync_account)  # type: ignore[arg-type]
