"""Settings shared by the small Django projects of the Django-based peers."""

import os
from pathlib import Path
from typing import Any

SECRET_KEY = "benchmarks-not-secret"
USE_TZ = True
TIME_ZONE = "UTC"
WORKDIR = Path(os.environ.get("BENCH_WORKDIR", "."))
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")


def sqlite_database(name: str) -> dict[str, Any]:
    """A SQLite file in the run's workdir, in WAL mode so the harness can count while it runs."""
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": WORKDIR / name,
        "OPTIONS": {"init_command": "PRAGMA journal_mode=WAL;"},
    }
