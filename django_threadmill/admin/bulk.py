"""Actions on every task a filter of the task list matches, not only the ticked rows.

The confirmation names the filter and how many tasks the action would change now; confirming
walks the filter again and applies the action task by task through the same fenced backend
calls as the single actions, so a task that changed meanwhile is left alone and reported.
"""

from dataclasses import dataclass
from urllib.parse import urlencode

from django.http import QueryDict

from ..codec.ids import SHOWN_ID_CHARS, named_short
from .actions import Selected, TaskAction
from .display import named
from .results import STATUSES, matching

MAX_BULK = 10_000  # tasks one action on a filter changes at most; the confirmation says so
BULK_SCAN_BUDGET = 200_000  # index entries one such walk reads at most


@dataclass(frozen=True, slots=True, kw_only=True)
class Matched:
    """The tasks a filter matches that ``action`` applies to, as they are now."""

    selected: list[Selected]
    complete: bool  # False: the walk stopped at MAX_BULK or the scan budget
    budget_spent: bool  # it stopped at the scan budget, with fewer than MAX_BULK tasks
    filters: dict[str, str]  # as the walk read them: what the confirmation names and sends

    @property
    def description(self) -> str:
        """Name the filter as the list's filter form shows it; a queue or task path posted by
        hand past SHOWN_ID_CHARS is cut short, where the page showed 10,000 characters whole."""
        parts = []
        if backend := self.filters.get("backend"):
            parts.append(f"backend {backend}")
        if queue := self.filters.get("queue"):
            parts.append(f"queue {named_short(queue)}")
        parts.append(f"status {STATUSES[self.filters.get('status', '')][0]}")
        if task := self.filters.get("task"):
            parts.append(f"task path containing {named(task, SHOWN_ID_CHARS)}")
        return ", ".join(parts)

    @property
    def logged(self) -> str:
        """Name the filter as the audit line logs it: the list's query string ("" for none),
        each value past SHOWN_ID_CHARS by its start and length, as the line's ``task=`` names
        an id, where a queue or task path posted by hand was logged whole. The quotes, commas
        and parentheses of such a cut are left unescaped, so it reads as the messages write it."""
        named_values = {name: named_short(value) for name, value in self.filters.items()}
        return urlencode(named_values, safe="'(),")


def matched(query: QueryDict, action: TaskAction) -> Matched:
    """Walk the filter in ``query``; keep the tasks in the state ``action`` applies to.

    A backend or status the list's form never sends raises results.UnknownFilter: nothing is
    acted on, where reading it as "all" widened the action (docs/admin.md, Actions and what
    they promise).
    """
    filters, rows, complete = matching(
        query, action.applies_to, want=MAX_BULK, budget=BULK_SCAN_BUDGET
    )
    # A task may be read twice: READY, then delayed, after a worker ran it meanwhile and its
    # attempt failed with a retry. It is acted on once, as it is counted once.
    selected: dict[tuple[str, str], Selected] = {}
    for alias, row in rows:
        selected.setdefault((alias, row.id), Selected(alias=alias, task_id=row.id, state=row.state))
    return Matched(
        selected=list(selected.values()),
        complete=complete,
        # The walk stops at MAX_BULK rows or at the budget: with fewer rows, at the budget.
        budget_spent=not complete and len(rows) < MAX_BULK,
        filters=filters.chosen(),
    )
