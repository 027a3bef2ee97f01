"""A group's callback is found due in one read, whatever the group's size (advance.lua's
``left:i`` counters), and workflows stored before the counters still advance."""

import redis

from django_threadmill.broker import Broker
from django_threadmill.workflows import group, step
from django_threadmill.workflows.plan import plan, workflow_fields

from .tasks import collect, number


def stored_group(broker: Broker, workflow_id: str, members: int) -> int:
    """Store a workflow of ``members`` steps and a callback; return the callback's index."""
    planned = plan(group(*(step(number, n) for n in range(members)), then=step(collect)))
    broker.create_workflow(workflow_id, workflow_fields(planned.steps))
    return members


def commands(client: redis.Redis) -> int:
    stats = client.info("commandstats")
    return sum(
        int(value["calls"]) for name, value in stats.items() if name != "cmdstat_config|resetstat"
    )


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
    return commands(redis_client)


def test_a_members_advance_costs_the_same_in_a_group_of_ten_or_of_three_hundred(
    broker: Broker, redis_client: redis.Redis
) -> None:
    assert commands_of_a_member_advance(broker, redis_client, 10) == (
        commands_of_a_member_advance(broker, redis_client, 300)
    )


def test_the_last_member_makes_the_callback_due_once(broker: Broker) -> None:
    callback = stored_group(broker, "g", 50)
    due = [broker.advance_workflow("g", i, "successful", str(i))[1] for i in range(50)]
    assert due == [[]] * 49 + [[callback]]
    # A repeated report (a drain retried) finds the callback still due until it is enqueued.
    assert broker.advance_workflow("g", 49, "successful", "49") == ("open", [callback])
    broker.mark_enqueued("g", [callback])
    assert broker.advance_workflow("g", 49, "successful", "49") == ("open", [])


def test_a_workflow_stored_before_the_counters_still_advances(
    broker: Broker, redis_client: redis.Redis
) -> None:
    callback = stored_group(broker, "old", 5)
    redis_client.hdel(broker.keyspace.workflow("old"), f"left:{callback}")
    due = [broker.advance_workflow("old", i, "successful", str(i))[1] for i in range(5)]
    assert due == [[]] * 4 + [[callback]]
