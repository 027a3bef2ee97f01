"""A step's value is copied into its workflow's hash only when a step takes it as input.

advance.lua copied every successful step's value into the hash, for the steps that take it:
a group of members returning 1 MB each with no callback, or a chain's last step, held each
value twice in Redis, in its record and in the hash, until the workflow expired
(docs/workflows.md, What it costs).
"""

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from django_threadmill.workflows import chain, group, step

from .tasks import length, number, text_of

BIG = 100_000


def test_only_the_values_a_step_takes_are_in_the_hash(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    flow = chain(
        step(number, 0), group(chain(step(text_of, BIG), step(length)), step(text_of, BIG))
    ).enqueue()

    drain()

    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert [r.return_value for r in flow.results if r is not None] == [
        0,
        "x" * BIG,
        BIG,
        "x" * BIG,
    ]
    values = redis_client.hkeys(backend.broker.keyspace.workflow(flow.id))
    assert sorted(f for f in values if f.startswith("v:")) == ["v:0", "v:1"]  # taken by 1, 2
