"""Every difference between Django's built-in ``django.tasks`` and the ``django-tasks`` backport.

Django 6.0+ ships ``django.tasks``; Django 5.2 LTS gets the same API from the ``django_tasks``
package, with two exceptions renamed. Nothing else in the package imports either directly.
"""

from importlib.util import find_spec
from typing import TYPE_CHECKING

import django

from .exceptions import ImproperlyConfiguredThreadmill

# mypy checks the first branch only (django-stubs types django.tasks; the backport has no types).
if TYPE_CHECKING or find_spec("django.tasks") is not None:
    from django.tasks import (
        DEFAULT_TASK_BACKEND_ALIAS,
        DEFAULT_TASK_QUEUE_NAME,
        Task,
        TaskContext,
        TaskResult,
        TaskResultStatus,
        task,
        task_backends,
    )
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY, TaskError
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
    from django.tasks.signals import (
        log_task_enqueued,
        log_task_finished,
        log_task_started,
        task_enqueued,
        task_finished,
        task_started,
    )
    from django.utils.json import normalize_json

    TASKS_LOGGER_NAME = "django.tasks"  # where Django's own task receivers log each task
elif find_spec("django_tasks") is None:  # Django 5.2, installed without the backport extra.
    raise ImproperlyConfiguredThreadmill(
        "django-threadmill needs Django's task framework: django.tasks, built into Django 6.0 "
        f"and later, or on Django {django.get_version()}, the django-tasks backport. Install it "
        "with pip install \"django-threadmill[backport]\" and add 'django_tasks' to "
        "INSTALLED_APPS."
    )
else:  # Django 5.2 with the django-tasks backport.
    from django_tasks import (
        DEFAULT_TASK_BACKEND_ALIAS,
        DEFAULT_TASK_QUEUE_NAME,
        TaskContext,
        TaskResult,
        TaskResultStatus,
        task,
        task_backends,
    )
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import (
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        Task,  # django_tasks does not re-export Task at the top level
        TaskError,
    )
    from django_tasks.exceptions import (
        InvalidTaskError as InvalidTask,
    )
    from django_tasks.exceptions import TaskResultDoesNotExist
    from django_tasks.signals import (
        log_task_enqueued,
        log_task_finished,
        log_task_started,
        task_enqueued,
        task_finished,
        task_started,
    )
    from django_tasks.utils import normalize_json

    TASKS_LOGGER_NAME = "django_tasks"

# Django's own receivers of the task signals: each only logs one line to TASKS_LOGGER_NAME.
TASK_LOG_RECEIVERS = (log_task_enqueued, log_task_started, log_task_finished)

# Django 5.2's Signal.asend_robust runs the sync receivers in an asyncio task of their own, where
# the exception the sender handles is not seen (sys.exc_info() is empty); 6.0 awaits them in
# the sender's task, and asgiref raises that exception again in their thread.
ASEND_SHOWS_EXCEPTION = django.VERSION >= (6, 0)

__all__ = [
    "ASEND_SHOWS_EXCEPTION",
    "DEFAULT_TASK_BACKEND_ALIAS",
    "DEFAULT_TASK_QUEUE_NAME",
    "TASKS_LOGGER_NAME",
    "TASK_LOG_RECEIVERS",
    "TASK_MAX_PRIORITY",
    "TASK_MIN_PRIORITY",
    "BaseTaskBackend",
    "InvalidTask",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultStatus",
    "normalize_json",
    "task",
    "task_backends",
    "task_enqueued",
    "task_finished",
    "task_started",
]
