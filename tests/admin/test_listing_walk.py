"""listing.Walker: several queues' indexes read as one ordered list, page by page."""

import base64
import json

import pytest
import redis

from django_threadmill.admin.listing import Cursor, RowFilter, Stream, Walker
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Finish, Outcome
from django_threadmill.broker.inspect import Index, Inspector
from django_threadmill.codec.results import error_json
from django_threadmill.codec.times import now_ms
from testproject.example.tasks import add
from tests.backend_support import WORKER, start, succeed

QUEUES = ("default", "emails", "reports")
# Finish times are set an hour back (within result_ttl, so finish.lua's trim keeps them), at
# BASE + the offsets in TIMES; the snapshot AS_OF lies after all of them and before now.
BASE = now_ms() - 3_600_000
AS_OF = BASE + 10_000


def finished_with_times(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, times: dict[str, list[int]]
) -> list[tuple[float, int, str]]:
    """Finish tasks per queue and set their finish times; return the expected listing order."""
    expected = []
    for n, queue in enumerate(QUEUES):
        done = backend.broker.queue_keys(queue).done
        for finished_ms in times.get(queue, []):
            task_id = add.using(queue_name=queue).enqueue(1, 2).id
            succeed(backend, task_id, 3)
            redis_client.zadd(done, {task_id: BASE + finished_ms}, xx=True)
            expected.append((-finished_ms, n, task_id))
    # Newest first; ties follow the stream order, then Redis' reverse lexical order of ids.
    expected.sort(key=lambda e: (e[0], e[1]))
    ordered: list[tuple[float, int, str]] = []
    for key in sorted({(e[0], e[1]) for e in expected}):
        ordered += sorted((e for e in expected if (e[0], e[1]) == key), key=lambda e: e[2])[::-1]
    return ordered


def walker(backend: ThreadmillTaskBackend, as_of: int | None = AS_OF) -> Walker:
    inspector = Inspector(backend.broker)
    streams = [Stream("default", queue, inspector, Index.DONE) for queue in QUEUES]
    return Walker(streams, as_of)


TIMES = {
    "default": [100, 500, 500, 900, 1300],
    "emails": [200, 500, 700, 700, 700, 1500, 1600],
    "reports": [50, 500, 1000],
}


def test_pages_concatenate_to_the_merged_order(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    expected = [task_id for _, _, task_id in finished_with_times(backend, redis_client, TIMES)]
    walk, seen, cursor = walker(backend), [], Cursor(as_of_ms=AS_OF)
    for _ in range(len(expected)):
        page = walk.walk(cursor, want=4, budget=100)
        seen += [row.id for _, row in page.rows]
        cursor = page.end
        if not walk.has_more(cursor):
            break

    assert seen == expected
    assert cursor.position == len(expected)


def test_walking_back_finds_the_previous_page_start(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    finished_with_times(backend, redis_client, TIMES)
    walk = walker(backend)
    first = walk.walk(Cursor(as_of_ms=AS_OF), want=4, budget=100)
    second = walk.walk(first.end, want=4, budget=100)

    back = walk.walk(second.end, want=4, budget=100, backward=True)

    assert back.end == first.end
    assert [row.id for _, row in back.rows] == [row.id for _, row in second.rows][::-1]


def test_walking_back_goes_past_ids_a_page_skipped_before_its_first_row(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """The walk back stopped at the page's first row, a start after the ids the page skipped
    (here records gone, as for a filter's misses): not where the page started."""
    order = finished_with_times(backend, redis_client, TIMES)
    for _, n, task_id in order[4:6]:
        redis_client.delete(backend.broker.queue_keys(QUEUES[n]).record(task_id))
    walk = walker(backend)
    first = walk.walk(Cursor(as_of_ms=AS_OF), want=4, budget=100)
    second = walk.walk(first.end, want=4, budget=100)

    back = walk.walk(second.end, want=4, budget=100, backward=True)

    assert [row.id for _, row in second.rows] == [task_id for _, _, task_id in order[6:10]]
    assert back.end == first.end
    assert [row.id for _, row in back.rows] == [row.id for _, row in second.rows][::-1]


def test_walking_back_stops_at_the_budget_as_a_page_does(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """A filtered page that read its whole budget ends there: the walk back from the page after
    it reads as far, and no further (where the misses before it go on)."""
    order = finished_with_times(backend, redis_client, TIMES)
    for _, n, task_id in (order[1], order[7]):
        redis_client.hset(backend.broker.queue_keys(QUEUES[n]).record(task_id), "state", "failed")
    only_failed = RowFilter(fields=("state",), accepts=lambda fields: fields["state"] == "failed")
    walk = walker(backend)
    first = walk.walk(Cursor(as_of_ms=AS_OF), want=2, budget=4, keep=only_failed)
    second = walk.walk(first.end, want=2, budget=4, keep=only_failed)

    back = walk.walk(second.end, want=2, budget=4, keep=only_failed, backward=True)

    assert [row.id for _, row in second.rows] == [order[7][2]]
    assert back.end == first.end
    assert back.end.position == 4


def test_results_finishing_after_the_snapshot_do_not_shift_pages(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    expected = [task_id for _, _, task_id in finished_with_times(backend, redis_client, TIMES)]
    walk = walker(backend)
    first = walk.walk(Cursor(as_of_ms=AS_OF), want=5, budget=100)
    succeed(backend, add.enqueue(9, 9).id, 18)  # finishes at Redis time, after AS_OF

    second = walker(backend).walk(first.end, want=5, budget=100)

    assert [row.id for _, row in second.rows] == expected[5:10]


def test_a_filter_reads_at_most_the_budget_and_says_where_it_stopped(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    order = finished_with_times(backend, redis_client, TIMES)
    [failed] = [task_id for ms, _, task_id in order if ms == -1000]  # the 4th newest
    redis_client.hset(backend.broker.queue_keys("reports").record(failed), "state", "failed")
    only_failed = RowFilter(fields=("state",), accepts=lambda fields: fields["state"] == "failed")

    page = walker(backend).walk(Cursor(as_of_ms=AS_OF), want=4, budget=6, keep=only_failed)

    assert [row.id for _, row in page.rows] == [failed]
    assert page.examined == 6
    assert page.end.position == 6
    assert not page.exhausted


def test_cursor_survives_the_query_string_and_rejects_garbage() -> None:
    cursor = Cursor(
        as_of_ms=5, offsets={("default", "emails", "done"): 3, ("other", "x.y", "done"): 0}
    )

    assert Cursor.decode(cursor.encode()) == Cursor(
        as_of_ms=5, offsets={("default", "emails", "done"): 3}
    )
    assert Cursor.decode("not-a-cursor") is None
    assert Cursor.decode(Cursor(offsets={("a", "b", "done"): -1}).encode()) is None


def hand_made(raw: str) -> str:
    """Return ``raw`` encoded as a cursor, as someone editing the URL would."""
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def ready_offset(n: object) -> str:
    return json.dumps({"t": None, "o": [["default", "default", "ready", n]]})


HAND_MADE = {
    "a time of true": json.dumps({"t": True, "o": []}),
    "a time of 1e20": json.dumps({"t": 10**20, "o": []}),
    "a time of -1": json.dumps({"t": -1, "o": []}),
    "a time of 2.5": json.dumps({"t": 2.5, "o": []}),
    "an offset of true": ready_offset(True),
    "an offset of 1e20": ready_offset(10**20),
    "an offset of 2**53 + 1": ready_offset(2**53 + 1),
    "an offset of 3.0": ready_offset(3.0),
    "an offset of '3'": ready_offset("3"),
    "nested too deep": "[" * 5000,  # json raises RecursionError, not ValueError
}


@pytest.mark.parametrize("raw", HAND_MADE.values(), ids=HAND_MADE.keys())
def test_a_hand_made_cursor_out_of_range_or_of_another_type_is_garbage(raw: str) -> None:
    """A time of true reached Redis as ZCOUNT ... True (a 500); an offset of 1e20 a rank Redis
    refused (a 503 blaming Redis)."""
    assert Cursor.decode(hand_made(raw)) is None


def test_a_cursor_at_the_edges_of_its_range_is_kept() -> None:
    data = {"t": 2**53, "o": [["default", "default", "done", 2**53], ["a", "b", "ready", 0]]}

    assert Cursor.decode(hand_made(json.dumps(data))) == Cursor(
        as_of_ms=2**53,
        offsets={("default", "default", "done"): 2**53, ("a", "b", "ready"): 0},
    )


def test_a_filtered_walk_in_small_reads_keeps_the_merged_order(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("django_threadmill.admin.listing.SCAN_CHUNK", 2)
    expected = [task_id for _, _, task_id in finished_with_times(backend, redis_client, TIMES)]
    everything = RowFilter(fields=("state",), accepts=lambda fields: True)
    walk = walker(backend)

    page = walk.walk(Cursor(as_of_ms=AS_OF), want=100, budget=100, keep=everything)
    back = walk.walk(page.end, want=100, budget=100, keep=everything, backward=True)

    assert [row.id for _, row in page.rows] == expected
    assert page.exhausted
    assert [row.id for _, row in back.rows] == expected[::-1]
    assert back.end.position == 0


def test_several_indexes_are_read_one_after_the_other_both_ways(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    finished = [task_id for _, _, task_id in finished_with_times(backend, redis_client, TIMES)]
    ready = [add.using(queue_name=queue).enqueue(0, 0).id for queue in QUEUES for _ in range(2)]
    inspector = Inspector(backend.broker)
    streams = [
        Stream("default", queue, inspector, index)
        for index in (Index.READY, Index.DONE)
        for queue in QUEUES
    ]
    walk, seen, cursor, ends = Walker(streams, AS_OF), [], Cursor(as_of_ms=AS_OF), []
    while True:
        page = walk.walk(cursor, want=4, budget=100)
        seen.append([row.id for _, row in page.rows])
        ends.append(cursor := page.end)
        if not walk.has_more(cursor):
            break

    listed = [task_id for page_ids in seen for task_id in page_ids]
    assert sorted(listed[:6]) == sorted(ready)  # READY first, each queue in its run order
    assert listed[6:] == finished
    back = walk.walk(ends[2], want=4, budget=100, backward=True)
    assert back.end == ends[1]
    assert [row.id for _, row in back.rows] == seen[2][::-1]


def test_a_done_id_requeued_before_the_index_got_it_is_not_listed_as_finished(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """A worker's metrics send adds its finished ids to the done index about a second after
    their outcomes (broker/metrics.py): a task requeued in between leaves its id there while
    it waits again, and the finished list passes over it."""
    finished = [task_id for _, _, task_id in finished_with_times(backend, redis_client, TIMES)]
    requeued = add.enqueue(1, 1).id
    lease = start(backend, requeued)
    done = Finish(lease=lease, outcome=Outcome.FAILED, value=error_json(ValueError("x")),
                  started_ms=now_ms(), finished_ms=now_ms())  # fmt: skip
    assert backend.broker.finish(WORKER, [done]) == []
    assert backend.broker.requeue(requeued) == "requeued"
    backend.broker.send_metrics()
    done_key = backend.broker.queue_keys("default").done
    assert redis_client.zadd(done_key, {requeued: BASE + 800}, xx=True, ch=True) == 1
    walk = walker(backend)

    page = walk.walk(Cursor(as_of_ms=AS_OF), want=100, budget=100)
    back = walk.walk(page.end, want=100, budget=100, backward=True)

    assert [row.id for _, row in page.rows] == finished
    assert [row.id for _, row in back.rows] == finished[::-1]
    assert back.end.position == 0
