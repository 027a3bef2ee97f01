"""Find the part holding a task's record under any shard count its queue was used with.

A task's shard is picked from its id among the queue's N (broker/keys.py), so after a change
of ``queue_shards`` a record stored under the earlier N is where the configured N does not
look (docs/scaling.md, Changing the shard count). Every count is asked in one pipeline of
EXISTS, one per id and count recorded (``KeySpace.layouts``, read once per Inspector).
"""

from collections.abc import Iterable, Sequence

from ..broker import Broker


def located(broker: Broker, task_ids: Sequence[str], recorded: Iterable[bytes]) -> dict[str, str]:
    """Return those of ``task_ids`` that have a record, each with the part holding it (its
    configured count's first), from ``recorded``, the layouts set read as bytes."""
    candidates = {task_id: broker.parts_of_id(task_id, recorded) for task_id in task_ids}
    with broker.translated_errors(read=True), broker.client.pipeline(False) as pipe:
        for task_id, parts in candidates.items():
            for part in parts:
                pipe.exists(broker.queue_keys(part).record(task_id))
        replies = iter(pipe.execute())
    found = {}
    for task_id, parts in candidates.items():
        hits = [part for part in parts if next(replies)]
        if hits:
            found[task_id] = hits[0]
    return found
