"""Lifecycle tests run with the shortest lease settings take (1 s), so expiry is reached quickly
(polled, never slept)."""

import pytest


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"lease_ttl": 1.0}
