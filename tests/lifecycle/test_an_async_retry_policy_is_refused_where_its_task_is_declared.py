"""A retry policy written as ``async def`` is refused where its task is declared: the worker
and the reaper call a policy and use its answer as it returns, so such a policy gave a
coroutine, never awaited, and every failure of its task was FAILED with an ERROR."""

from datetime import timedelta

import pytest

from django_threadmill.compat import InvalidTask
from django_threadmill.retry import RetryContext
from django_threadmill.task import task

pytestmark = pytest.mark.usefixtures("backend")


async def retry_soon(context: RetryContext) -> timedelta | None:
    return timedelta(seconds=1)


class AsyncPolicy:
    async def __call__(self, context: RetryContext) -> timedelta | None:
        return timedelta(seconds=1)


def fetch() -> None:
    """A task that carries the policy."""


@pytest.mark.parametrize("policy", [retry_soon, AsyncPolicy()], ids=["function", "instance"])
def test_an_async_policy_is_an_invalid_task_naming_the_fix(policy: object) -> None:
    with pytest.raises(
        InvalidTask,
        match=(
            r"^retry=.* on task '.*\.fetch' is an async policy, which no worker awaits: its "
            r"answer is used as the call returns it\. Make it a plain def policy\(context\) "
            r"-> timedelta \| None\.$"
        ),
    ):
        task(retry=policy)(fetch)  # type: ignore[arg-type]
