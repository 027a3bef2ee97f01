"""task_enqueued receivers of a coalesced batch see their own caller's context variables.

The batch's signals were sent in one hop from the flusher's context: with 200 requests each
enqueueing once, 199 receivers saw the first request's id and language (Django's backend,
one hop per call, gets all 200 right). Callers holding the same values still share a hop.
"""

import asyncio
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import pytest
from django.utils import translation

from django_threadmill.compat import TaskResult, task_enqueued
from django_threadmill.enqueue import announce
from testproject.example.tasks import echo

CALLERS = 200
LANGUAGES = ["de", "fr", "nl", "pl"]  # each caller's active language, in turn
WAIT_S = 30  # a hang fails the test instead of the run

request_id: ContextVar[int | None] = ContextVar("request_id", default=None)


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch, threadmill_settings: None) -> list[list[Any]]:
    """The arguments of the tasks each hop to the sync thread announced.

    The backend is built here, after the patch (its announcer keeps the function it was built
    with), and in this thread, whose context asyncio.run copies: Django keeps backends in an
    asgiref Local, so a gathered task that built its own would hold a value of its own.
    """
    seen: list[list[Any]] = []
    announce_each = announce.announce_each

    def counted(sender: type, results: list[TaskResult]) -> list[Exception | None]:
        seen.append([result.args[0] for result in results])
        return announce_each(sender, results)

    monkeypatch.setattr(announce, "announce_each", counted)
    echo.get_backend()
    return seen


@pytest.fixture
def heard_in() -> Iterator[dict[int, tuple[int | None, str | None]]]:
    """By task argument: the request id and the active language its receiver saw."""
    seen: dict[int, tuple[int | None, str | None]] = {}

    def receiver(sender: type, task_result: TaskResult, **kwargs: Any) -> None:
        seen[task_result.args[0]] = (request_id.get(), translation.get_language())

    task_enqueued.connect(receiver)
    yield seen
    task_enqueued.disconnect(receiver)


def test_each_callers_receiver_sees_its_request_id_and_language(
    hops: list[list[Any]], heard_in: dict[int, tuple[int | None, str | None]]
) -> None:
    async def request(number: int) -> TaskResult:
        request_id.set(number)
        with translation.override(LANGUAGES[number % len(LANGUAGES)]):
            return await echo.aenqueue(number)

    async def requests() -> list[TaskResult]:
        calls = asyncio.gather(*(request(number) for number in range(CALLERS)))
        return await asyncio.wait_for(calls, WAIT_S)

    results = asyncio.run(requests())
    assert [result.args for result in results] == [[number] for number in range(CALLERS)]
    wrong = {
        number: seen
        for number, seen in heard_in.items()
        if seen != (number, LANGUAGES[number % len(LANGUAGES)])
    }
    assert (len(heard_in), wrong) == (CALLERS, {})
    assert sorted(len(hop) for hop in hops) == [1] * CALLERS  # one hop per caller, as Django's


def test_a_burst_from_one_coroutine_is_announced_in_one_hop(
    hops: list[list[Any]], heard_in: dict[int, tuple[int | None, str | None]]
) -> None:
    async def burst() -> list[TaskResult]:
        request_id.set(7)
        with translation.override("de"):
            calls = asyncio.gather(*(echo.aenqueue(number) for number in range(CALLERS)))
            return await asyncio.wait_for(calls, WAIT_S)

    results = asyncio.run(burst())
    assert [result.args for result in results] == [[number] for number in range(CALLERS)]
    assert hops == [list(range(CALLERS))]
    assert heard_in == {number: (7, "de") for number in range(CALLERS)}
