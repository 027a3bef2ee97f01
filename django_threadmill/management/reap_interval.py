"""The shortest wait between two reap passes the commands take: ``threadmill_reap --interval``
and ``threadmill_worker --reap-interval``."""

from django.core.management.base import CommandError

# Each pass is tens of Redis commands, and a lease lasts 1 s at the
# shortest: ``--interval 0.000001`` ran passes back to back, about 700 passes and 27,000 Redis
# commands a second, settling nothing sooner. The tests' own short loops use this.
MIN_REAP_INTERVAL_S = 0.05


def check_reap_interval(flag: str, seconds: float, fix: str) -> None:
    """Raise CommandError if ``seconds``, given above 0 as ``flag``, is below the floor,
    naming the floor and ``fix`` (what the option's author may use instead)."""
    if 0 < seconds < MIN_REAP_INTERVAL_S:
        raise CommandError(
            f"{flag} {seconds:g} is below the floor of {MIN_REAP_INTERVAL_S:g} seconds: passes "
            "that close run back to back, each tens of Redis commands, and settle no lease "
            f"sooner. {fix}"
        )
