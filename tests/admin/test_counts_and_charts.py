"""The queues page's numbers against known workloads: the overview columns, the last hour's
charts and task path table, at their edges (long runs, a short result_ttl, huge counts, hand-
written fields, two workers in one minute, the ends of the window)."""

import re
from datetime import timedelta

import pytest
import redis
from django.test import Client
from django.utils import timezone

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Finish, Outcome
from django_threadmill.codec.times import now_ms
from django_threadmill.testing import drain
from testproject.example.tasks import add, fail, flaky
from tests.admin.conftest import QUEUES_URL, page
from tests.admin.test_activity import ADD, finish_add
from tests.backend_support import WORKER, reserve, start

DASH = "\N{EN DASH}"  # what a cell shows for no value


def path_row(html: str, path: str) -> list[str]:
    """Return the number cells of ``path``'s row in the task path table."""
    [row] = re.findall(r"<tr>\s*<td>" + re.escape(path) + r"</td>.*?</tr>", html, re.S)
    return re.findall(r'<td class="num">(.*?)</td>', row)


def queue_row(html: str, queue: str) -> list[str]:
    """Return the number cells of ``queue``'s row in the overview table, links and titles
    stripped."""
    [row] = re.findall(r"<tr>\s*<td><a [^>]*>" + re.escape(queue) + r"</a>.*?</tr>", html, re.S)
    cells = re.findall(r'<td class="num"[^>]*>(.*?)</td>', row, re.S)
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in cells]


def chart(html: str, queue: str) -> str:
    figure = rf'<figure class="tm-chart-box" id="tm-chart-{queue}">.*?</figure>'
    found = re.search(figure, html, re.S)
    assert found is not None, f"no chart of {queue}"
    return found[0]


def bar_titles(html: str, queue: str) -> list[str]:
    return re.findall(r"<title>(.*?)</title>", chart(html, queue))


def minute_with_room(broker: Broker, room_ms: int = 3000) -> int:
    """Return the Redis minute once at least ``room_ms`` of it is left: a test that counts
    into one minute and reads it back must not straddle two."""
    deadline = now_ms() + 5000
    while (now := broker.server_time_ms()) % 60_000 > 60_000 - room_ms:
        assert now_ms() < deadline, "the Redis clock did not reach the next minute"
    return now // 60_000


def test_a_known_workload_is_counted_as_it_ran(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    """5 successes, 2 failures, one task retried twice and then successful; a delayed, a
    reserved and a running task, two waiting in a paused queue."""
    for n in range(5):
        add.enqueue(n, 1)
    for _ in range(2):
        fail.enqueue("no")
    flaky.enqueue()
    drain()
    add.using(queue_name="emails", run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 1)
    reserve(backend, add.using(queue_name="reports").enqueue(1, 2).id)
    start(backend, add.using(queue_name="reports").enqueue(1, 3).id)
    backend.broker.pause("emails", "test")
    add.using(queue_name="emails").enqueue(1, 4)
    add.using(queue_name="emails").enqueue(1, 5)

    html = page(operator, QUEUES_URL)

    # READY, Delayed, Reserved, RUNNING, SUCCESSFUL, FAILED, Done/min (1, 5, 15 min)
    assert queue_row(html, "default")[:9] == ["0", "0", "0", "0", "6", "2", "8.0", "1.6", "0.5"]
    assert queue_row(html, "emails")[:6] == ["2", "1", "0", "0", "0", "0"]
    assert queue_row(html, "reports")[:6] == ["0", "0", "1", "1", "0", "0"]
    assert "All time in this queue: 6 successful, 2 failed, 2 retried." in html
    assert "6 successful, 2 failed (25.0% failed)" in chart(html, "default")
    assert path_row(html, ADD)[:4] == ["5", "0", "0.0%", "0"]
    assert path_row(html, "testproject.example.tasks.fail")[:4] == ["2", "2", "100.0%", "0"]
    assert path_row(html, "testproject.example.tasks.flaky")[:4] == ["1", "0", "0.0%", "2"]


def test_a_run_time_past_the_last_bucket_reads_over_an_hour_not_nothing(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    """Runs longer than an hour fall in the +Inf bucket: their p50 read as a dash, as for a path
    with no run time at all."""
    for _ in range(3):
        finish_add(backend, Outcome.SUCCESSFUL, run_ms=2 * 3600 * 1000)

    cells = path_row(page(operator, QUEUES_URL), ADD)

    assert cells == ["3", "0", "0.0%", "0", "&gt; 3600 s", "&gt; 3600 s"]


def test_p95_past_the_last_bucket_with_a_p50_inside_it(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    for _ in range(18):
        finish_add(backend, Outcome.SUCCESSFUL, run_ms=3)
    for _ in range(2):
        finish_add(backend, Outcome.SUCCESSFUL, run_ms=5000 * 1000)

    assert path_row(page(operator, QUEUES_URL), ADD)[-2:] == ["≤ 0.005 s", "&gt; 3600 s"]


@pytest.mark.parametrize("tasks_options", [{"result_ttl": 60}])
def test_done_per_minute_counts_no_window_the_results_index_does_not_keep(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """Done/min counts the results index, which forgets results after result_ttl: with a
    minute's ttl, 4 tasks finished in the last 5 minutes read 0.2/min (1 kept / 5)."""
    for _ in range(3):
        finish_add(backend, Outcome.SUCCESSFUL, run_ms=3)
    done = backend.broker.queue_keys("default").done
    three_minutes_ago = backend.broker.server_time_ms() - 3 * 60_000
    redis_client.zadd(done, dict.fromkeys(redis_client.zrange(done, 0, -1), three_minutes_ago))
    finish_add(backend, Outcome.SUCCESSFUL, run_ms=3)  # its send trims the three
    assert redis_client.zcard(done) == 1

    html = page(operator, QUEUES_URL)

    assert queue_row(html, "default")[4:9] == ["1", "0", "1.0", DASH, DASH]
    assert 'title="Results are kept 60 s (result_ttl): too short to count 5 minutes."' in html


def test_huge_counts_are_grouped_in_the_chart_as_in_the_tables(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """Counters summed by HINCRBY over a busy hour, as a fleet writes them."""
    finish_add(backend, Outcome.SUCCESSFUL, run_ms=3)
    minute = backend.broker.queue_keys("default").metrics_minute(
        backend.broker.server_time_ms() // 60_000
    )
    redis_client.hincrby(minute, f"{ADD}|successful", 1_234_566)
    redis_client.hincrby(minute, f"{ADD}|failed", 2_000)

    html = page(operator, QUEUES_URL)

    assert "1,234,567 successful, 2,000 failed (0.2% failed)" in chart(html, "default")
    assert "now · peak 1,236,567/min" in chart(html, "default")
    assert bar_titles(html, "default")[-1] == "0 min ago: 1,234,567 successful, 2,000 failed"
    assert path_row(html, ADD)[:2] == ["1,236,567", "2,000"]


def test_hand_written_fields_that_name_no_task_path_add_no_row_and_no_count(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """The workers write "<task path>|<name>"; a field without a path, or naming nothing the
    table counts, made a row of its own (an empty task path) and swelled the chart."""
    finish_add(backend, Outcome.SUCCESSFUL, run_ms=3)
    minute = backend.broker.queue_keys("default").metrics_minute(
        backend.broker.server_time_ms() // 60_000
    )
    redis_client.hset(
        minute, mapping={"junk": 5, "|successful": 7, "shop.tasks.ship|bogus": 1, "x|failed": "?"}
    )

    html = page(operator, QUEUES_URL)

    assert "1 successful, 0 failed (0.0% failed)" in chart(html, "default")
    assert re.findall(r"<tr>\s*<td>([^<]*)</td><td>default</td>", html) == [ADD]
    assert path_row(html, ADD) == ["1", "0", "0.0%", "0", "≤ 0.005 s", "≤ 0.005 s"]


def test_two_workers_sending_in_the_same_minute_add_up(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    other = Broker(backend.settings)  # a second worker process: a tally of its own
    minute_with_room(backend.broker)
    finish_add(backend, Outcome.SUCCESSFUL, run_ms=3)
    finish_add(backend, Outcome.SUCCESSFUL, run_ms=3)
    lease = reserve(backend, add.enqueue(1, 2).id)
    started = now_ms()
    failed = Finish(lease=lease, outcome=Outcome.FAILED, value="{}", started_ms=started,
                    finished_ms=started + 30)  # fmt: skip
    assert other.finish(WORKER, [failed]) == []
    other.send_metrics()
    other.client.close()

    html = page(operator, QUEUES_URL)

    assert bar_titles(html, "default")[-1] == "0 min ago: 2 successful, 1 failed"
    assert path_row(html, ADD) == ["3", "1", "33.3%", "0", "≤ 0.005 s", "≤ 0.05 s"]


def test_the_window_holds_the_current_minute_and_the_59_before_it(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    keys = backend.broker.queue_keys("default")
    now = minute_with_room(backend.broker)
    for ago in (60, 59, 30, 0):
        redis_client.hset(keys.metrics_minute(now - ago), f"{ADD}|successful", 100 + ago)

    html = page(operator, QUEUES_URL)

    titles = bar_titles(html, "default")
    assert len(titles) == 60
    assert titles[0] == "59 min ago: 159 successful, 0 failed"
    assert titles[29] == "30 min ago: 130 successful, 0 failed"
    assert titles[-1] == "0 min ago: 100 successful, 0 failed"
    assert "389 successful, 0 failed" in chart(html, "default")  # not the 160 of minute -60


@pytest.mark.parametrize("tasks_options", [{"queue_shards": {"default": 3}}])
def test_a_sharded_queue_sums_its_shards_in_every_number(operator: Client) -> None:
    for n in range(9):
        add.enqueue(n, 1)
    for _ in range(3):
        fail.enqueue("no")
    drain()
    for n in range(4):
        add.enqueue(n, 2)

    html = page(operator, QUEUES_URL)

    assert "(3 shards)" in html
    assert queue_row(html, "default")[:7] == ["4", "0", "0", "0", "9", "3", "12.0"]
    assert "All time in this queue: 9 successful, 3 failed, 0 retried." in html
    assert "9 successful, 3 failed (25.0% failed)" in chart(html, "default")
    assert path_row(html, ADD)[:2] == ["9", "0"]


def test_a_minute_hash_of_another_type_is_reported_in_its_backend_block(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, two_aliases: None
) -> None:
    """The last hour was read outside the block's error handling: one such key (written by
    hand) failed the whole page with a 503, every other backend with it. It now leaves its
    queue out of the last hour alone, naming the key."""
    finish_add(backend, Outcome.SUCCESSFUL, run_ms=3)
    minute = backend.broker.queue_keys("default").metrics_minute(
        backend.broker.server_time_ms() // 60_000 - 5
    )
    redis_client.set(minute, "not a hash")

    html = page(operator, QUEUES_URL)

    default = html[html.index("Backend “default”") : html.index("Backend “bulk”")]
    assert "holds a value of the wrong kind" not in default
    assert f"The last hour of default is left out: its key {minute} holds another type" in default
    assert 'id="tm-chart-bulk-in"' in html[html.index("Backend “bulk”") :]
