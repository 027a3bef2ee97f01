"""A cron written with cronie's time zone prefix (``CRON_TZ=Europe/Berlin 0 3 * * *``) is refused
naming the schedule's 'timezone' key, where the zone goes, not as six fields."""

import pytest

from django_threadmill.schedules.checks import BAD_TIMING
from tests.schedules.test_checks import problems

WHERE = "TASKS['default']['OPTIONS']['schedules']['s']: "


@pytest.mark.parametrize("variable", ["CRON_TZ", "TZ"])
def test_the_prefix_is_an_error_naming_the_timezone_key(
    redis_url: str, key_prefix: str, variable: str
) -> None:
    """It was refused as "it has 6 fields ...: seconds and years are not supported", which
    sent the user looking for a sixth field to drop."""
    cron = f"{variable}=Europe/Berlin 0 3 * * *"
    [(found_id, found)] = problems(redis_url, key_prefix, cron=cron)
    assert found_id == BAD_TIMING
    assert found == (
        f"{WHERE}cron {cron!r} does not parse ('{variable}=Europe/Berlin' sets the time zone "
        "in a crontab, which a schedule takes as its 'timezone' key: write 'cron': "
        "'0 3 * * *', 'timezone': 'Europe/Berlin')."
    )
    assert problems(redis_url, key_prefix, cron="0 3 * * *", timezone="Europe/Berlin") == []
