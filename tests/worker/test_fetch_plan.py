"""How a refill splits its free slots between queues (worker/fetch_plan.py)."""

from django_threadmill.worker.fetch_plan import PEEKS_PER_REFILL, PROBE_EVERY_S, FetchPlan


def never_held(queue: str) -> bool:
    return False


def answered(plan: FetchPlan, had_tasks: bool, *queues: str) -> FetchPlan:
    """Tell ``plan`` that each of ``queues`` had tasks or none."""
    for queue in queues:
        plan.found(queue, had_tasks)
    return plan


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
    plan = answered(FetchPlan(("a", "b", "c")), True, "a", "b", "c")

    assert plan.counts(1, never_held) == {"a": 1}
    assert plan.counts(1, never_held) == {"b": 1}
    assert plan.counts(2, never_held) == {"c": 1, "a": 1}


def test_queues_not_answered_yet_that_get_no_slot_are_peeked_at_in_the_same_refill() -> None:
    """Left for the refills after, a --burst worker of 2,000 empty queues at one thread learned
    them a few a refill, probing all those found empty meanwhile: it ended after 53 s."""
    plan = FetchPlan(("a", "b", "c"))

    assert plan.counts(1, never_held) == {"a": 1, "b": 0, "c": 0}
    assert plan.unasked == []

    answered(plan, True, "a", "b", "c")
    assert plan.counts(1, never_held) == {"b": 1}  # queues that had tasks are not peeked at


def test_a_refill_peeks_at_no_more_queues_not_answered_yet_than_its_bound() -> None:
    queues = tuple(f"q{n}" for n in range(2 * PEEKS_PER_REFILL + 10))
    plan = FetchPlan(queues)

    first = plan.counts(4, never_held)

    assert len(first) == 4 + PEEKS_PER_REFILL
    assert plan.unasked == [queue for queue in queues if queue not in first]  # asked next


def test_forgotten_queues_are_peeked_at_by_the_next_refill() -> None:
    plan = answered(FetchPlan(("a", "b", "c")), False, "a", "b", "c")

    plan.forget_empty()

    assert plan.counts(1, never_held) == {"a": 1, "b": 0, "c": 0}


def test_a_probe_peeks_at_a_bounded_slice_of_the_queues_found_empty_in_turn() -> None:
    """Probing every queue found empty cost a busy worker beside 1,000 of them 79 Redis calls a
    task: a call per empty queue every 50 ms."""
    now = [10.0]
    empty = tuple(f"q{n}" for n in range(2 * PEEKS_PER_REFILL + PEEKS_PER_REFILL // 2))
    plan = answered(FetchPlan(("busy", *empty), clock=lambda: now[0]), False, *empty)
    plan.found("busy", True)

    probes = []
    for _ in range(3):
        probes.append(plan.counts(16, never_held).keys() - {"busy"})
        assert plan.counts(16, never_held) == {"busy": 16}  # till PROBE_EVERY_S has passed
        now[0] += PROBE_EVERY_S

    assert [len(probed) for probed in probes] == [PEEKS_PER_REFILL] * 3
    assert set().union(*probes) == set(empty)  # each one within three probes
    assert probes[2] >= set(empty[2 * PEEKS_PER_REFILL :])  # the last first, then from the top


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
    plan = answered(FetchPlan(("a", "b", "c", "d")), True, "a", "c")
    answered(plan, False, "b", "d")
    for free in range(1, 20):
        counts = plan.counts(free, never_held)
        assert sum(counts.values()) == free
        assert all(count > 0 or queue in ("b", "d") for queue, count in counts.items())


def test_queues_left_out_for_want_of_slots_are_named_until_asked_or_found_empty() -> None:
    plan = answered(FetchPlan(("a", "b", "c")), True, "a", "b", "c")

    assert plan.counts(2, never_held) == {"a": 1, "b": 1}
    assert plan.unasked == ["c"]
    answered(plan, False, "a", "b")
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
