"""A workflow of thousands of steps launches: its hash is written in one call whatever its size.

create_workflow.lua wrote the hash with one HSET of every field, unpacked from its arguments,
and Lua unpacks at most about 8,000 values: a group of 2,000 members (two fields each, a field
and a value per field) or a chain of 1,400 steps failed to launch with Redis's "too many
results to unpack" (docs/workflows.md, What it costs).
"""

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.testing import drain
from django_threadmill.workflows import chain, get_workflow, group, step

from .tasks import add, collect, number

MEMBERS = 2500  # 5,005 fields: 10,010 values to unpack


def test_a_group_of_thousands_of_members_launches_and_calls_back_with_every_value(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    flow = group(*(step(number, n) for n in range(MEMBERS)), then=step(collect)).enqueue()

    key = backend.broker.keyspace.workflow(flow.id)
    assert redis_client.ttl(key) == -1  # persistent: its first steps were marked
    assert [s.state for s in get_workflow(flow.id).steps] == ["READY"] * MEMBERS + ["WAITING"]
    drain(max_tasks=MEMBERS + 1)
    flow.refresh()
    assert flow.status == TaskResultStatus.SUCCESSFUL
    assert flow.results[-1] is not None
    assert flow.results[-1].return_value == list(range(MEMBERS))


def test_a_chain_of_thousands_of_steps_launches(backend: ThreadmillTaskBackend) -> None:
    flow = chain(step(number, 0), *(step(add, 1) for _ in range(1999))).enqueue()

    assert [s.state for s in flow.steps] == ["READY"] + ["WAITING"] * 1999
    assert flow.cancel("launched")
