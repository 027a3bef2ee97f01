"""The row an empty table shows in its place ("No worker has renewed a lease recently.", "No task
matches.") spans every column of its table, for staff with and without the change permission
(which adds a column to the task list and the queues table): the workers' row spanned 6 of 7
columns, and the task list's 10 of a read-only viewer's 9; the queues table's rows of a queue
on a node that does not answer, and of no queue, 13 of a viewer's 12."""

from html.parser import HTMLParser

import pytest
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.broker.layouts import QueueNames
from django_threadmill.exceptions import BrokerUnavailable
from tests.admin.conftest import QUEUES_URL, TASKS_URL, page


class Tables(HTMLParser):
    """Collect, for each of the section's tables (class ``tm-grid``: the admin's own have no
    header), its header width and the width of each of its body rows, colspans counted."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[int, list[int]]] = []  # (header width, body row widths)
        self.inside = False
        self.part = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "table" and "tm-grid" in (attributes.get("class") or "").split():
            self.inside, self.part = True, ""
            self.tables.append((0, []))
        if not self.inside:
            return
        span = int(attributes.get("colspan") or 1)
        if tag in ("thead", "tbody"):
            self.part = tag
        elif tag == "tr" and self.part == "tbody":
            self.tables[-1][1].append(0)
        elif tag == "th" and self.part == "thead":
            header, rows = self.tables[-1]
            self.tables[-1] = (header + span, rows)
        elif tag == "td" and self.part == "tbody":
            self.tables[-1][1][-1] += span

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.inside = False


def widths(body: str) -> list[tuple[int, list[int]]]:
    parser = Tables()
    parser.feed(body)
    return parser.tables


@pytest.mark.parametrize("who", ["operator", "viewer"])
@pytest.mark.parametrize(
    "url",
    [QUEUES_URL, TASKS_URL + "?queue=nowhere", TASKS_URL + "workflows/"],
    ids=["queues page", "task list", "workflows"],
)
def test_every_body_row_spans_the_header(
    operator: Client, viewer: Client, backend: ThreadmillTaskBackend, who: str, url: str
) -> None:
    tables = widths(page({"operator": operator, "viewer": viewer}[who], url))

    assert tables
    for header, rows in tables:
        assert rows
        assert rows == [header] * len(rows)


@pytest.mark.parametrize("who", ["operator", "viewer"])
@pytest.mark.parametrize("queues", [["default"], []], ids=["unreached", "none used"])
def test_the_queue_rows_that_stand_in_for_counts_span_the_header(
    operator: Client,
    viewer: Client,
    backend: ThreadmillTaskBackend,
    monkeypatch: pytest.MonkeyPatch,
    who: str,
    queues: list[str],
) -> None:
    """A queue on a Redis Cluster node that does not answer, and the row of a backend with no
    queue, span the queues table whoever looks: both spanned 13 columns of a viewer's 12."""
    down = BrokerUnavailable("Redis at redis://node-3:6379 did not answer.")
    names = QueueNames(queues=queues, unreached=dict.fromkeys(queues, down))
    monkeypatch.setattr(Broker, "reached", lambda self, read: names)

    [queues_table, *_] = widths(page({"operator": operator, "viewer": viewer}[who], QUEUES_URL))

    header, rows = queues_table
    assert rows == [header]
