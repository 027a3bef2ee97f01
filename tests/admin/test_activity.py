"""The queues page's last hour: a chart per queue and the task path table, from the counters."""

import re

from django.test import Client

from django_threadmill.admin.charts import CHART_HEIGHT, throughput_chart
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Finish, Outcome
from django_threadmill.codec.times import now_ms
from testproject.example.tasks import add
from tests.admin.conftest import QUEUES_URL
from tests.backend_support import WORKER, reserve

ADD = "testproject.example.tasks.add"


def finish_add(backend: ThreadmillTaskBackend, outcome: Outcome, run_ms: int) -> None:
    """Run ``add`` once through the broker, as if it took ``run_ms``."""
    lease = reserve(backend, add.enqueue(1, 2).id)
    started = now_ms()
    done = Finish(
        lease=lease, outcome=outcome, value="3", started_ms=started, finished_ms=started + run_ms
    )
    assert backend.broker.finish(WORKER, [done]) == []
    backend.broker.send_metrics()  # as the worker's ack writer does on its own clock


def test_the_queues_page_charts_the_last_hour_and_tables_each_task_path(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    for run_ms in (3, 4, 40):
        finish_add(backend, Outcome.SUCCESSFUL, run_ms)
    finish_add(backend, Outcome.FAILED, 3)

    page = operator.get(QUEUES_URL).content.decode()

    assert '<meta http-equiv="refresh" content="5">' in page
    chart = re.search(
        r'<figure class="tm-chart-box" id="tm-chart-default">.*?</figure>', page, re.S
    )
    assert chart is not None
    assert "3 successful, 1 failed (25.0% failed)" in chart[0]
    assert chart[0].count('class="tm-ok"') == 1  # all in the current minute
    assert chart[0].count('class="tm-failed"') == 1
    [row] = re.findall(r"<tr>\s*<td>" + re.escape(ADD) + r"</td>.*?</tr>", page, re.S)
    cells = re.findall(r'<td class="num">(.*?)</td>', row)
    assert cells == ["4", "1", "25.0%", "0", "≤ 0.005 s", "≤ 0.05 s"]


def test_a_quiet_hour_says_so(operator: Client, backend: ThreadmillTaskBackend) -> None:
    page = operator.get(QUEUES_URL).content.decode()
    assert "No task finished in the last 60 minutes." in page
    assert page.count('<svg class="tm-chart"') == len(backend.queues)


def test_bars_stack_failures_under_successes_and_scale_to_the_peak() -> None:
    chart = throughput_chart([(0, 0), (3, 1), (1, 1)], [2, 1, 0])
    empty, peak, small = chart.bars
    assert (empty.ok_height, empty.failed_height) == (0, 0)
    assert peak.failed_y == CHART_HEIGHT - peak.failed_height
    assert peak.ok_y + peak.ok_height == peak.failed_y
    assert peak.ok_height + peak.failed_height == CHART_HEIGHT
    assert small.ok_height == small.failed_height == CHART_HEIGHT / 4
    assert (chart.peak, chart.successful, chart.failed) == (4, 4, 2)
    assert small.title == "0 min ago: 1 successful, 1 failed"
