"""The test project with a fresh project's logging: the root logger prints to the console.

This is the LOGGING many projects start with. ``django.tasks`` is left alone unless
THREADMILL_DJANGO_TASKS_LEVEL names a level, as a project that configures it itself would.
"""

import os
from importlib.util import find_spec

from .settings import *  # noqa: F403

LOGGING = {
    "version": 1,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
if level := os.environ.get("THREADMILL_DJANGO_TASKS_LEVEL"):
    tasks_logger = "django.tasks" if find_spec("django.tasks") else "django_tasks"  # backport
    LOGGING["loggers"] = {tasks_logger: {"level": level}}
