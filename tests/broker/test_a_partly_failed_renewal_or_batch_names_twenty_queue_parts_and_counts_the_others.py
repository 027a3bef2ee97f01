"""A renewal, or a batch of start notices or outcomes, whose calls failed in some queue parts
names at most 20 of those parts and counts the others: "not renewed in queue q0000, ..., q0019
and 980 more, renewed in the others: ...".

It named every one: a worker serving thousands of queues, on a Redis Cluster whose primary
holding a third of them is down, logged a message of tens of KB at every renewal and every ack
batch for as long as the node was down (wording.listed_names).
"""

import pytest

from django_threadmill.broker import Start
from django_threadmill.broker.transitions import _Fenced, _partly_renewed
from django_threadmill.exceptions import BrokerUnavailable, PartlyAcked
from django_threadmill.wording import MAX_LISTED_IDS

PARTS = [f"q{n:04}" for n in range(1_000)]  # the queue parts whose call failed
DOWN = BrokerUnavailable("Redis at redis://node-3:6379 did not answer")


def named(parts: list[str]) -> str:
    """How a message names ``parts``: the first 20, and how many more."""
    return f"{', '.join(parts[:MAX_LISTED_IDS])} and {len(parts) - MAX_LISTED_IDS} more"


def not_written(parts: list[str]) -> str:
    """The message of a batch whose calls in ``parts`` failed."""
    fenced: _Fenced[Start] = _Fenced(failed=dict.fromkeys(parts, DOWN))
    with pytest.raises(PartlyAcked) as raised:
        fenced.partly([])
    return str(raised.value)


def test_a_renewal_failed_in_a_thousand_parts_names_twenty_and_counts_the_others() -> None:
    error = _partly_renewed({}, dict.fromkeys(PARTS, DOWN), [])

    assert str(error) == f"not renewed in queue {named(PARTS)}, renewed in the others: {DOWN}"
    assert error.failed == tuple(PARTS)  # the caller still learns every one


def test_a_renewal_failed_in_a_few_parts_names_them_all() -> None:
    error = _partly_renewed({}, dict.fromkeys(["emails", "images"], DOWN), [])

    assert str(error) == f"not renewed in queue emails and images, renewed in the others: {DOWN}"


def test_a_batch_failed_in_a_thousand_parts_names_twenty_and_counts_the_others() -> None:
    assert not_written(PARTS) == (
        f"not written in queue {named(PARTS)}, written in the others: {DOWN}"
    )


def test_a_batch_failed_in_a_few_parts_names_them_all() -> None:
    assert not_written(["emails", "images"]) == (
        f"not written in queue emails and images, written in the others: {DOWN}"
    )
