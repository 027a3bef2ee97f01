"""``OPTIONS["queue_shards"]``: split a hot queue over several hash tags (docs/scaling.md).

One queue is one hash slot, so one Redis node's CPU is its ceiling. A queue with N shards keeps
its tasks under N tags, so a Redis Cluster spreads it over up to N nodes. 1 means unsharded:
today's keys exactly, so existing data stays readable.
"""

from typing import Any

from ..exceptions import ImproperlyConfiguredThreadmill
from .limits import QueueLimit

MAX_QUEUE_SHARDS = 256  # each shard is one more script call for the reaper and the admin


def read_queue_shards(value: object) -> dict[str, int]:
    """Return ``OPTIONS["queue_shards"]`` as queue name -> shard count, or raise the fix."""
    if not isinstance(value, dict):
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS['queue_shards'] is {value!r}. Use a dict of queue name to a number of "
            "shards, e.g. {'default': 4}."
        )
    for queue, shards in value.items():
        if (
            isinstance(shards, bool)
            or not isinstance(shards, int)
            or not 1 <= shards <= MAX_QUEUE_SHARDS
        ):
            raise ImproperlyConfiguredThreadmill(
                f"OPTIONS['queue_shards'][{queue!r}] is {shards!r}. Use a whole number from 1 "
                f"(unsharded) to {MAX_QUEUE_SHARDS}, e.g. the number of Redis Cluster primaries."
            )
    return dict(value)


def check_sharded_limits(options: dict[str, Any]) -> None:
    """Refuse a queue that is both sharded and limited.

    A limit is enforced by the acquire script against one queue's keys (limits.py); split
    over shards it would allow N times the limit, so the combination is refused.
    """
    shards: dict[str, int] = options.get("queue_shards", {})
    limits: dict[str, QueueLimit] = options.get("queue_limits", {})
    both = sorted(queue for queue in limits if shards.get(queue, 1) > 1)
    if both:
        raise ImproperlyConfiguredThreadmill(
            f"OPTIONS names queue {both[0]!r} in both 'queue_shards' and 'queue_limits'. A "
            "concurrency or rate limit holds within one shard only, so a sharded queue cannot "
            "keep it: drop the queue from 'queue_shards' (a limited queue is rarely hot), or "
            "from 'queue_limits'."
        )
