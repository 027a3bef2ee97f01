"""PerLoop: one value per event loop, closed on the loop as it shuts down, dropped after."""

import asyncio

from django_threadmill.broker.per_loop import PerLoop


def test_each_loop_gets_its_own_value_closed_as_the_loop_ends() -> None:
    made: list[int] = []
    closed: list[tuple[int, bool]] = []

    async def close(value: int) -> None:
        closed.append((value, asyncio.get_running_loop().is_running()))

    values = PerLoop(lambda: made.append(len(made)) or made[-1], close)

    async def twice() -> tuple[int, int]:
        return values.get(), values.get()

    assert asyncio.run(twice()) == (0, 0)
    assert closed == [(0, True)]
    assert asyncio.run(twice()) == (1, 1)
    assert closed == [(0, True), (1, True)]
    assert len(values) == 1  # the first loop's value was dropped when the second asked


def test_a_loop_closed_without_shutting_down_is_dropped_all_the_same() -> None:
    values = PerLoop(object)

    async def get() -> object:
        return values.get()

    for _ in range(3):
        loop = asyncio.new_event_loop()
        loop.run_until_complete(get())
        loop.close()  # no shutdown_asyncgens: nothing closes the value, it is only dropped
    assert len(values) == 1
