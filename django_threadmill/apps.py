"""App config: lets the admin section and management commands be found, registers the checks
that read Redis (django.tasks' own check calls each backend's ``check()``, which does not)."""

from typing import Any

from django.apps import AppConfig
from django.core import checks
from django.core.checks import CheckMessage

from .aliases import threadmill_aliases, threadmill_backend
from .backend import ThreadmillTaskBackend
from .checks import REDIS_TAG, asked_redis_messages, check_redis


def _backends() -> list[ThreadmillTaskBackend]:
    return [threadmill_backend(alias) for alias in threadmill_aliases()]


def asked_redis_checks(**kwargs: Any) -> list[CheckMessage]:
    """The Redis checks, where a command asked for them (``manage.py check --tag threadmill``,
    the worker and the reaper at start); every other command passes without Redis."""
    return asked_redis_messages(_backends)


def deploy_redis_checks(**kwargs: Any) -> list[CheckMessage]:
    """The Redis checks of ``manage.py check --deploy``."""
    return [message for backend in _backends() for message in check_redis(backend)]


class ThreadmillConfig(AppConfig):
    name = "django_threadmill"
    verbose_name = "Threadmill"
    default_auto_field = "django.db.models.AutoField"

    def ready(self) -> None:
        checks.register(asked_redis_checks, REDIS_TAG)
        checks.register(deploy_redis_checks, REDIS_TAG, deploy=True)
