"""Helpers for the fault tests: executions counted outside Redis, results read back."""

from collections import Counter
from pathlib import Path

from django_threadmill.compat import TaskResult, TaskResultStatus


def executions(log: Path) -> Counter[str]:
    """Count executions per task id from the tasks' own log."""
    return Counter(log.read_text().split()) if log.exists() else Counter()


def statuses(results: list[TaskResult]) -> Counter[TaskResultStatus]:
    """Refresh every result and count their statuses."""
    for result in results:
        result.refresh()
    return Counter(result.status for result in results)


def all_successful(results: list[TaskResult]) -> bool:
    return statuses(results) == Counter({TaskResultStatus.SUCCESSFUL: len(results)})
