"""The note of the queues page and the task list on a Redis Cluster node that does not answer
names at most 20 of the queues it keeps unread and counts the others: "... are unavailable:
q0000, ..., q0019 and 980 more.".

It named every one: with thousands of queues, a third of them on the node that was down, the
note above each page was tens of KB (wording.listed_names).
"""

from django_threadmill.admin.display import queues_unread
from django_threadmill.broker.layouts import QueueNames
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.wording import MAX_LISTED_IDS

QUEUES = [f"q{n:04}" for n in range(1_000)]
FEW = ["emails", "images"]
DOWN = BrokerUnavailable("Redis at redis://node-3:6379 did not answer.")
SET_UNREAD = (
    f"The queue set could not be read: {DOWN} The queues listed are those in QUEUES alone (a "
    "queue registered only in Redis is not listed), and those on that node are unavailable: "
)
UNAVAILABLE = "The queues on a Redis Cluster node that does not answer are unavailable: "


def unread(queues: list[str], *, set_too: bool) -> str:
    """The note of a page that could not read ``queues``, nor the queue set if ``set_too``,
    on the node of DOWN."""
    names = QueueNames(
        queues=queues, unknown=DOWN if set_too else None, unreached=dict.fromkeys(queues, DOWN)
    )
    return queues_unread(names)


def test_a_thousand_queues_unavailable_are_named_twenty_and_counted() -> None:
    named = f"{', '.join(QUEUES[:MAX_LISTED_IDS])} and 980 more"

    assert unread(QUEUES, set_too=False) == f"{UNAVAILABLE}{named}. {DOWN}"
    assert unread(QUEUES, set_too=True) == f"{SET_UNREAD}{named}."


def test_a_few_queues_unavailable_are_all_named() -> None:
    assert unread(FEW, set_too=False) == f"{UNAVAILABLE}emails and images. {DOWN}"
    assert unread(FEW, set_too=True) == f"{SET_UNREAD}emails and images."
