"""A member's advance costs the same whatever the group's size (advance.lua reads a step's
inputs on from where the last look stopped, ``cur:i``), and outcomes recorded by an earlier
version, which keeps no such place, still count."""

import pytest
import redis

from django_threadmill.broker import Broker
from django_threadmill.workflows import group, step
from django_threadmill.workflows.plan import plan, workflow_fields
from tests.support import command_calls

from .tasks import collect, number


def stored_group(broker: Broker, workflow_id: str, members: int) -> int:
    """Store a workflow of ``members`` steps and a callback; return the callback's index."""
    planned = plan(group(*(step(number, n) for n in range(members)), then=step(collect)))
    broker.create_workflow(workflow_id, workflow_fields(planned.steps))
    return members


def commands_of_a_member_advance(broker: Broker, redis_client: redis.Redis, members: int) -> int:
    """The commands of the last but one member's advance, the others before it having ended
    in order: the member whose check had to read every input before it."""
    workflow_id = f"g{members}"
    stored_group(broker, workflow_id, members)
    for i in range(members - 2):
        broker.advance_workflow(workflow_id, i, "successful", str(i))
    redis_client.config_resetstat()
    member = members - 2
    assert broker.advance_workflow(workflow_id, member, "successful", "1") == ("open", [])
    return sum(command_calls(redis_client).values())


def test_a_members_advance_costs_the_same_in_a_group_of_ten_or_of_three_hundred(
    broker: Broker, redis_client: redis.Redis
) -> None:
    assert commands_of_a_member_advance(broker, redis_client, 10) == (
        commands_of_a_member_advance(broker, redis_client, 300)
    )


@pytest.mark.parametrize(
    "order",
    [list(range(50)), list(range(49, -1, -1)), [*range(1, 50, 2), *range(0, 50, 2)]],
    ids=["in order", "reversed", "odd then even"],
)
def test_the_last_member_makes_the_callback_due_once(broker: Broker, order: list[int]) -> None:
    callback = stored_group(broker, "g", 50)
    due = [broker.advance_workflow("g", i, "successful", str(i))[1] for i in order]
    assert due == [[]] * 49 + [[callback]]
    last = order[-1]
    # A repeated report (a drain retried) finds the callback still due until it is enqueued.
    assert broker.advance_workflow("g", last, "successful", "x") == ("open", [callback])
    broker.mark_enqueued("g", [callback])
    assert broker.advance_workflow("g", last, "successful", "x") == ("open", [])


def test_outcomes_an_earlier_version_recorded_still_count(
    broker: Broker, redis_client: redis.Redis
) -> None:
    """An earlier advance.lua records a member's outcome without moving the place: the
    callback is still found due once the last member ends."""
    callback = stored_group(broker, "mixed", 5)
    assert broker.advance_workflow("mixed", 0, "successful", "0") == ("open", [])
    for i in (1, 2, 3):  # what the earlier script writes for a member that succeeded
        redis_client.hset(broker.keyspace.workflow("mixed"), mapping={f"s:{i}": "successful"})
        redis_client.hset(broker.keyspace.workflow("mixed"), mapping={f"v:{i}": str(i)})
        redis_client.hincrby(broker.keyspace.workflow("mixed"), "succeeded", 1)
    assert broker.advance_workflow("mixed", 4, "successful", "4") == ("open", [callback])
