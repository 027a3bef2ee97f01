"""Lifecycle tests run with a short lease so expiry is reached quickly (polled, never slept)."""

import pytest


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"lease_ttl": 0.2}
