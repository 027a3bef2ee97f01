"""The task list: every state (running, waiting, then finished newest first), filtered.

Filters: backend alias, queue, status and task path; the search box finds one task by id.
Paging walks the per-queue indexes through ``listing.Walker``; see its module docstring.
"""

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict
from django.utils.text import get_text_list

from ..aliases import sources
from ..broker.inspect import Index, NotUtf8Id, TaskRow, task_path_in_head
from ..broker.inspect.source import Source
from ..codec.ids import SHOWN_ID_CHARS, TASK_ID_SEPARATOR, make_task_id, named_short
from ..exceptions import BrokerUnavailable
from .display import NOT_UTF8_ID_LABEL, named, page_address, queues_unread, state_label, when
from .listing import Cursor, RowFilter, Stream, Walker

DETAIL_URL_NAME = "admin:django_threadmill_task_detail"
LIST_PER_PAGE = 50  # rows per page
SCAN_BUDGET = 5000  # index entries a filtered page reads at most before it offers to go on

# status filter value -> (label, indexes walked in this order, record states kept (None: all)).
# The list opens on every state: a READY task must not look lost behind a filter.
STATUSES: dict[str, tuple[str, tuple[Index, ...], frozenset[str] | None]] = {
    "": ("All states", (Index.LEASES, Index.READY, Index.DELAYED, Index.DONE), None),
    "finished": ("Finished", (Index.DONE,), None),
    "successful": ("SUCCESSFUL", (Index.DONE,), frozenset({"successful"})),
    "failed": ("FAILED", (Index.DONE,), frozenset({"failed"})),
    "ready": ("READY (run order)", (Index.READY,), None),
    "delayed": ("Delayed (run_after or retry)", (Index.DELAYED,), None),
    "running": ("RUNNING or reserved", (Index.LEASES,), None),
}
# The indexes holding a task in the state an action applies to (actions.TaskAction.applies_to):
# an action walks only those of its filter. On "All states" it read the running and waiting
# tasks before the first FAILED one, and a backlog filled its read limit before any.
HOLDING: dict[str, frozenset[Index]] = {
    "failed": frozenset({Index.DONE}),
    "ready": frozenset({Index.READY, Index.DELAYED}),
}


class UnknownFilter(ValueError):
    """A backend or status the list's filter form never sends, given to an action that changes
    data: it is refused, where the list shows every backend or state for it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Filters:
    """The list's filters, read from the query string and checked against what exists."""

    backend: str
    queue: str
    status: str
    task: str
    search: str

    @classmethod
    def read(cls, query: QueryDict, aliases: list[str], *, strict: bool = False) -> "Filters":
        """Read the filters in ``query``. A backend or status the form does not offer (an old
        or edited link) filters nothing on a page; with ``strict`` (an action that changes
        data) it raises UnknownFilter naming it, so the action is not widened to everything."""
        backend = query.get("backend", "")
        status = query.get("status", "")
        if strict and backend and backend not in aliases:
            raise UnknownFilter(
                f"backend {named(backend)} is not a ThreadmillTaskBackend alias in TASKS "
                f"({', '.join(aliases)}). Choose the backend in the list's filter and try again."
            )
        if strict and status not in STATUSES:
            known = ", ".join(value for value in STATUSES if value)
            raise UnknownFilter(
                f"status {named(status)} is none the list's filter offers ({known}, or nothing "
                "for all states). Choose the status in the list's filter and try again."
            )
        return cls(
            backend=backend if backend in aliases else "",
            queue=query.get("queue", "").strip(),
            status=status if status in STATUSES else "",
            task=query.get("task", "").strip(),
            search=query.get("q", "").strip(),
        )

    def chosen(self) -> dict[str, str]:
        """Return the filters that are set, by the name the filter form gives them."""
        values = {
            "backend": self.backend,
            "queue": self.queue,
            "status": self.status,
            "task": self.task,
        }
        return {name: value for name, value in values.items() if value}

    def query(self, **changes: str) -> str:
        """Return the query string of these filters with ``changes``, for links."""
        query = QueryDict(mutable=True)
        for name, value in {**self.chosen(), **changes}.items():
            if value:
                query[name] = value
        return query.urlencode()

    def keep(self) -> RowFilter | None:
        """Return the filter the walk applies, or None when every row is kept."""
        states = STATUSES[self.status][2]
        needle = self.task.lower()
        if states is None and not needle:
            return None

        def accepts(fields: dict[str, str | None]) -> bool:
            if states is not None and fields["state"] not in states:
                return False
            return not needle or needle in task_path_in_head(fields.get("payload")).lower()

        return RowFilter(fields=("state", "payload") if needle else ("state",), accepts=accepts)


def _streams(
    chosen: list[Source],
    filters: Filters,
    indexes: tuple[Index, ...],
    *,
    every_count: bool,
    served: bool = False,
) -> list[Stream]:
    """Return one stream per index and queue part the filters choose: a sharded queue has one
    per shard; with ``every_count``, also one per part of every other shard count the queue was
    used with, as the queues page counts them (docs/scaling.md, Changing the shard count).

    With ``served``, the queues on a Redis Cluster node that answers alone (``Source.names``),
    which the page names; else every queue, or the error of the queue set unread: an action
    must not take a queue it could not read for one without matches."""
    return [
        Stream(source.alias, part, source.inspector, index)
        for index in indexes
        for source in chosen
        for queue, parts in source.inspector.parts_to_sum(
            [q for q in _queues(source, served) if not filters.queue or q == filters.queue],
            every_count=every_count,
        ).items()
        for part in parts
    ]


def _queues(source: Source, served: bool) -> list[str]:
    """Return the queues of ``source`` (``_streams``)."""
    return source.names.served if served else source.queues()


def task_page_url(alias: str, task_id: str) -> str:
    """Return the address of the page of task ``task_id``, or "" where no address names it:
    an id that is not UTF-8 (``NotUtf8Id``) names no record, and one written by hand may not
    fit in a URL (``page_address``)."""
    return "" if isinstance(task_id, NotUtf8Id) else page_address(DETAIL_URL_NAME, alias, task_id)


def _row_view(alias: str, row: TaskRow) -> dict[str, Any]:
    """Return what one list row shows; URLs are built here, not by a template tag per row.

    An id that is not UTF-8 names no record, so its row has no page to link to, no action; a
    task stored under another shard count has a page but no action, which would miss it.
    """
    readable = not isinstance(row.id, NotUtf8Id)
    return {
        "alias": alias,
        "row": row,
        "url": task_page_url(alias, row.id),
        "selectable": readable and not row.stored_elsewhere,
        "path_query": urlencode({"task": row.path}),
        "label": state_label(row.state) if readable else NOT_UTF8_ID_LABEL,
        "enqueued_at": when(row.enqueued_ms),
        "finished_at": when(row.finished_ms),
        "due_at": when(row.due_ms),
        "progress": row.progress,
    }


def _search(chosen: list[Source], filters: Filters) -> list[dict[str, Any]]:
    """Find the task whose id is the search text; without its "@queue", try every queue."""
    found = []
    for source in chosen:
        if TASK_ID_SEPARATOR in filters.search:
            candidates = [filters.search]
        else:
            candidates = [make_task_id(filters.search, queue) for queue in source.names.served]
        hits = source.inspector.located(candidates)
        rows = source.inspector.rows(hits, hits)
        found += [_row_view(source.alias, row) for row in rows.values() if row is not None]
    return found


def _left_out_of_search(filters: Filters, aliases: list[str]) -> str:
    """Return the note naming the queue, status and task path filters the id search does not
    apply, and the backend filter it does ("" for none): it finds a task wherever it is in the
    backends chosen (docs/admin.md, Tasks). A task of queue default listed under "Queue:
    emails" read as if the filters had matched it, and one of another backend was "0 tasks"
    without a word on where the search had looked."""
    narrowed = (
        f"The search by id looks in backend {named(filters.backend)} only, as the Backend "
        "filter chose: choose All backends to look in every one."
        if filters.backend and len(aliases) > 1
        else ""
    )
    left_out = [
        text
        for value, text in (
            (filters.queue, f"queue {named(filters.queue, SHOWN_ID_CHARS)}"),
            (filters.status, f"status {STATUSES[filters.status][0]}"),
            (filters.task, f"task path {named(filters.task, SHOWN_ID_CHARS)}"),
        )
        if value
    ]
    if not left_out:
        return narrowed
    leaves = (
        "The search by id looks in every queue and state: it leaves out the filters beside it "
        f"({get_text_list(left_out, 'and')})."
    )
    return f"{leaves} {narrowed}".rstrip()


def _filtered(
    query: QueryDict, *, strict: bool = False
) -> tuple[list[Source], Filters, list[Source]]:
    """Return every alias's Source, the filters in ``query``, and the Sources they choose."""
    everything = sources()
    filters = Filters.read(query, [s.alias for s in everything], strict=strict)
    return (
        everything,
        filters,
        [s for s in everything if not filters.backend or s.alias == filters.backend],
    )


def _answering(chosen: list[Source]) -> tuple[list[Source], list[str], list[str]]:
    """Return the Sources whose Redis answered the read of their queues, the queues of every
    chosen one (a left-out alias's QUEUES: a filter on one is not "no such queue"), and a note
    naming each left-out alias with its error. One alias's Redis down answered the whole list
    with a 503, hiding the other aliases' tasks and the filter that would choose them, which
    the queues page shows. With none answering, the first error is raised (the 503 page)."""
    answering, queues, notes, errors = [], set(), [], []
    for source in chosen:
        try:
            queues.update(source.names.queues)  # read once: the Source keeps it for the page
        except BrokerUnavailable as exc:
            queues.update(source.configured)
            notes.append(f"Backend “{source.alias}” is left out: {exc}")
            errors.append(exc)
        else:
            answering.append(source)
    if errors and not answering:
        raise errors[0]
    return answering, sorted(queues), notes


def results_context(query: QueryDict) -> dict[str, Any]:
    """Return the template context of one page of the task list."""
    everything, filters, chosen = _filtered(query)
    chosen, queues, down = _answering(chosen)
    context: dict[str, Any] = {
        "unread": down + [note for s in chosen if (note := queues_unread(s.names))],
        "filters": filters,
        "row_query": f"{kept}&" if (kept := filters.query(task="")) else "",
        "aliases": [s.alias for s in everything],
        "queues": queues,
        # A queue the chosen backends do not have still filters (nothing matches): the menu
        # shows it, where it showed "All queues" and filtering again dropped it.
        "queue_unknown": bool(filters.queue) and filters.queue not in queues,
        # What the page says of a queue or id given by hand: cut short past SHOWN_ID_CHARS,
        # where a link's 10,000 characters were echoed whole (the form's fields keep it whole).
        "queue_named": named_short(filters.queue),
        "search_named": named(filters.search, SHOWN_ID_CHARS),
        "statuses": [(value, label) for value, (label, _, _) in STATUSES.items()],
        "filter_fields": [
            ("backend", filters.backend),
            ("queue", filters.queue),
            ("status", filters.status),
            ("task", filters.task),
        ],
    }
    if filters.search:
        return {
            **context,
            "rows": _search(chosen, filters),
            "searching": True,
            "search_left_out": _left_out_of_search(filters, context["aliases"]),
        }
    return {**context, **_page(chosen, filters, query)}


def matching(
    query: QueryDict, state: str, *, want: int, budget: int
) -> tuple[Filters, list[tuple[str, TaskRow]], bool]:
    """Return the list's filters in ``query``, (alias, row) of the first ``want`` tasks in
    ``state`` they match, reading at most ``budget`` entries of the indexes that hold such
    tasks (``HOLDING``), and whether that is every match. The id search is ignored; a backend
    or status the form never sends raises UnknownFilter, as an action walks this."""
    _, filters, chosen = _filtered(query, strict=True)
    listed = filters.keep()

    def accepts(fields: dict[str, str | None]) -> bool:
        return fields["state"] == state and (listed is None or listed.accepts(fields))

    keep = RowFilter(fields=listed.fields if listed else ("state",), accepts=accepts)
    indexes = tuple(index for index in STATUSES[filters.status][1] if index in HOLDING[state])
    # The configured count's only: requeue and cancel reach no other (docs/scaling.md).
    walker = Walker(_streams(chosen, filters, indexes, every_count=False), None)
    walk = walker.walk(Cursor(), want=want, budget=budget, keep=keep)
    return filters, walk.rows, walk.exhausted or not walker.has_more(walk.end)


def _total(chosen: list[Source], streams: list[Stream], as_of: int | None) -> int:
    """Return how many ids the walked indexes hold (done: finished by the snapshot time)."""
    return sum(
        source.inspector.index_size(
            index,
            [st.queue for st in streams if st.alias == source.alias and st.index is index],
            as_of if index.newest_first else None,
        )
        for source in chosen
        for index in dict.fromkeys(st.index for st in streams)
    )


def _page(chosen: list[Source], filters: Filters, query: QueryDict) -> dict[str, Any]:
    indexes = STATUSES[filters.status][1]
    streams = _streams(chosen, filters, indexes, every_count=True, served=True)
    start = Cursor.decode(query.get("cursor"))
    before = Cursor.decode(query.get("before"))
    as_of = (start or before or Cursor()).as_of_ms
    if as_of is None and Index.DONE in indexes:
        as_of = max((s.inspector.now_ms() for s in chosen), default=None)
    walker = Walker(streams, as_of)
    keep = filters.keep()
    if start is None and before is not None:  # "Newer": find where the previous page starts
        back = walker.walk(before, want=LIST_PER_PAGE, budget=SCAN_BUDGET, keep=keep, backward=True)
        start = back.end
    start = start or Cursor(as_of_ms=as_of)
    page = walker.walk(start, want=LIST_PER_PAGE, budget=SCAN_BUDGET, keep=keep)
    more = not page.exhausted and walker.has_more(page.end)
    total = None if keep else _total(chosen, streams, as_of)
    return {
        "rows": [_row_view(alias, row) for alias, row in page.rows],
        "index": indexes[0].value if len(indexes) == 1 else "",
        "examined": page.examined,
        "damaged": page.damaged,
        "filtered": keep is not None,
        "first_position": page.start.position + 1,
        "last_position": page.start.position + page.examined,
        # Positions the page passed without a row: the index named a task whose record is gone
        # or runs again (``Walker._listed``); "Showing 1 to 50" sat above fewer rows unsaid.
        "gone": 0 if keep else page.examined - len(page.rows),
        "total": total,
        "as_of": when(as_of),
        "newest_query": filters.query(),
        "newer_query": filters.query(before=page.start.encode()) if page.start.position else None,
        "older_query": filters.query(cursor=page.end.encode()) if more else None,
    }
