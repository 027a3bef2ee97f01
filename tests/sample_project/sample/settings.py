"""A small project that tests its tasks with django_threadmill.testing, as a user's would.

Redis comes from REDIS_URL, the key prefix from SAMPLE_KEY_PREFIX (the fixtures flush every key
under it), and the test database from SAMPLE_TEST_DB (a file; unset, SQLite in memory).
"""

import os
from importlib.util import find_spec
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = "sample-not-secret"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = ["django_threadmill", "orders"]
if find_spec("django.tasks") is None:  # Django 5.2: the django-tasks backport
    INSTALLED_APPS.append("django_tasks")

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": BASE_DIR / "sample.sqlite3",
        "TEST": {"NAME": os.environ.get("SAMPLE_TEST_DB")},
    }
}

TASKS = {
    "default": {
        "BACKEND": "django_threadmill.backend.ThreadmillTaskBackend",
        "LOCATION": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        "QUEUES": ["default"],
        "OPTIONS": {"key_prefix": os.environ.get("SAMPLE_KEY_PREFIX", "sample")},
    }
}
