"""A generator function, sync or ``async def``, is refused where its task is declared: each run
returns a generator, which no worker can store. An async one went to a worker thread, was never
run, and failed at every enqueue's run with "returned an async_generator, which is not JSON".
"""

from collections.abc import AsyncIterator, Iterator

import pytest

from django_threadmill.compat import InvalidTask
from django_threadmill.task import task

pytestmark = pytest.mark.usefixtures("backend")


def rows() -> Iterator[int]:
    yield 1


async def arows() -> AsyncIterator[int]:
    yield 1


@pytest.mark.parametrize("function", [rows, arows], ids=["sync", "async"])
def test_a_generator_function_is_an_invalid_task_naming_the_fix(function: object) -> None:
    with pytest.raises(
        InvalidTask,
        match=(
            r"^Task '.*\.a?rows' is a generator function: each run would return a generator, "
            r"which no worker can store\. Return the items instead \(a list\), or store them "
            r"elsewhere and return their key\.$"
        ),
    ):
        task(function)  # type: ignore[arg-type]
