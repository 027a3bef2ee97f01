"""``manage.py check``, Django's own, where ``--tag threadmill`` also reads Redis.

The checks that read Redis are skipped by every command that does not need Redis (migrate,
runserver, test: they must work with Redis down). ``--deploy`` runs them as deployment
checks; this lets ``--tag threadmill`` ask for them by name without ``--deploy``.
"""

from contextlib import nullcontext
from typing import Any

from django.core.management.commands import check

from ...checks import REDIS_TAG, RedisChecks, redis_checks
from ..checks_at_start import settings_refused_plainly


class Command(check.Command):
    def handle(self, *app_labels: Any, **options: Any) -> None:
        asked = REDIS_TAG in (options["tags"] or ()) and not options["deploy"]
        with (
            settings_refused_plainly(),
            redis_checks(RedisChecks.ASKED) if asked else nullcontext(),
        ):
            super().handle(*app_labels, **options)
