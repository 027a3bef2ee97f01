"""testproject's settings with the LOGGING of many a fresh project: root on the console.

No `django.tasks` logger is configured, so Django's own task_started/task_finished receivers
log through the root handler unless the worker keeps them quiet (issue 10, DESIGN.md §6).
"""

from testproject.settings import *  # noqa: F403

LOGGING = {
    "version": 1,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
