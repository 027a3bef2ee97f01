"""A task bound to backend "other": imported only where TASKS has that backend, since a task
is validated against its backend as it is made."""

from tests.schedules.tasks import report

report_elsewhere = report.using(backend="other")
