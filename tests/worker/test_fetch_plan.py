"""How a refill splits its free slots between queues (worker/fetch_plan.py)."""

from django_threadmill.worker.fetch_plan import PROBE_EVERY_S, FetchPlan


def never_held(queue: str) -> bool:
    return False


def test_unknown_queues_share_evenly_and_the_first_in_turn_rotates() -> None:
    plan = FetchPlan(("a", "b", "c"))

    assert plan.counts(128, never_held) == {"a": 43, "b": 43, "c": 42}
    assert plan.counts(128, never_held) == {"b": 43, "c": 43, "a": 42}
    assert plan.counts(128, never_held) == {"c": 43, "a": 43, "b": 42}


def test_an_empty_queue_is_probed_with_one_slot_and_the_busy_one_gets_the_rest() -> None:
    plan = FetchPlan(("default", "emails", "reports"))
    plan.found("default", True)
    plan.found("emails", False)
    plan.found("reports", False)

    assert plan.counts(64, never_held) == {"default": 62, "emails": 1, "reports": 1}


def test_a_probed_queue_that_had_a_task_gets_its_share_next_time() -> None:
    plan = FetchPlan(("default", "emails"))
    plan.found("default", True)
    plan.found("emails", False)
    assert plan.counts(64, never_held) == {"default": 63, "emails": 1}

    plan.found("emails", True)

    assert plan.counts(64, never_held) == {"emails": 32, "default": 32}


def test_when_every_queue_was_empty_all_share_again() -> None:
    plan = FetchPlan(("a", "b"))
    plan.found("a", False)
    plan.found("b", False)

    assert plan.counts(10, never_held) == {"a": 5, "b": 5}


def test_forget_empty_makes_every_queue_busy_again() -> None:
    plan = FetchPlan(("a", "b"))
    plan.found("a", True)
    plan.found("b", False)

    plan.forget_empty()

    assert plan.counts(10, never_held) == {"a": 5, "b": 5}


def test_fewer_slots_than_queues_go_to_the_queues_in_turn() -> None:
    plan = FetchPlan(("a", "b", "c"))

    assert plan.counts(1, never_held) == {"a": 1}
    assert plan.counts(1, never_held) == {"b": 1}
    assert plan.counts(2, never_held) == {"c": 1, "a": 1}


def test_busy_queues_come_before_probes_when_slots_are_short() -> None:
    now = [10.0]
    plan = FetchPlan(("a", "b", "c"), clock=lambda: now[0])
    plan.found("a", False)

    assert plan.counts(2, never_held) == {"a": 0, "b": 1, "c": 1}  # a is peeked at
    now[0] += PROBE_EVERY_S
    assert plan.counts(3, never_held) == {"a": 1, "b": 1, "c": 1}


def test_held_back_queues_are_not_asked() -> None:
    plan = FetchPlan(("a", "b", "c"))

    assert plan.counts(10, lambda queue: queue == "b") == {"a": 5, "c": 5}
    assert plan.counts(10, lambda queue: True) == {}


def test_never_more_than_the_free_slots() -> None:
    plan = FetchPlan(("a", "b", "c", "d"))
    plan.found("b", False)
    plan.found("d", False)
    for free in range(1, 20):
        counts = plan.counts(free, never_held)
        assert sum(counts.values()) == free
        assert all(count > 0 or queue in ("b", "d") for queue, count in counts.items())


def test_queues_left_out_for_want_of_slots_are_named_until_asked_or_found_empty() -> None:
    plan = FetchPlan(("a", "b", "c"))

    assert plan.counts(2, never_held) == {"a": 1, "b": 1}
    assert plan.unasked == ["c"]
    plan.found("a", False)
    plan.found("b", False)
    # c is busy, b is probed, a is peeked at
    assert plan.counts(2, never_held) == {"b": 1, "c": 1, "a": 0}
    assert plan.unasked == []


def test_an_empty_queue_beside_a_busy_one_is_probed_at_most_every_50_ms() -> None:
    now = [10.0]
    plan = FetchPlan(("default", "emails"), clock=lambda: now[0])
    plan.found("default", True)
    plan.found("emails", False)
    assert plan.counts(16, never_held) == {"default": 15, "emails": 1}

    now[0] = 10.0 + 0.01
    assert plan.counts(16, never_held) == {"default": 16}  # probed 10 ms ago: not again

    now[0] = 10.0 + PROBE_EVERY_S
    assert plan.counts(16, never_held) == {"default": 15, "emails": 1}


def test_a_queue_found_empty_with_a_delayed_task_is_asked_again_when_it_is_due() -> None:
    """Woken for another queue only, a refill asked that one and forgot the delayed task: it
    waited for as long as the other queue's wake tokens came."""
    now = [10.0]
    plan = FetchPlan(("default", "emails"), clock=lambda: now[0])
    plan.found("default", False, next_due_ms=2000)  # a retry due in 2 s, nothing ready
    plan.woken(frozenset({"emails"}))
    assert plan.counts(16, never_held) == {"emails": 16}
    assert plan.next_due_ms() == 2000  # the wait ends when it is due

    now[0] = 12.0
    assert plan.next_due_ms() == 0
    assert plan.counts(16, never_held) == {"default": 8, "emails": 8}
    assert plan.next_due_ms() is None  # asked again like a busy queue: it answers for itself
