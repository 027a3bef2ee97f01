"""Settings for the demo and the test suite. Redis comes from REDIS_URL (tests set it)."""

import json
import os
from importlib.util import find_spec
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent
SECRET_KEY = "testproject-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["*"]
USE_TZ = True
TIME_ZONE = "UTC"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_threadmill",
    "testproject.example",
]
if find_spec("django.tasks") is None:  # Django 5.2: the django-tasks backport
    INSTALLED_APPS.append("django_tasks")

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "testproject.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("THREADMILL_DB", BASE_DIR.parent / "testproject.sqlite3"),
    }
}
STATIC_URL = "static/"

TASKS = {
    "default": {
        "BACKEND": "django_threadmill.backend.ThreadmillTaskBackend",
        "LOCATION": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        "QUEUES": os.environ.get("THREADMILL_QUEUES", "default,emails,reports").split(","),
        "OPTIONS": {
            "key_prefix": os.environ.get("THREADMILL_KEY_PREFIX", "tm"),
            "lease_ttl": float(os.environ.get("THREADMILL_LEASE_TTL", "60")),
            # More OPTIONS as JSON (queue_limits, schedules, cluster, sentinel, durability), so
            # tests can give them to workers.
            **json.loads(os.environ.get("THREADMILL_OPTIONS", "{}")),
        },
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django_threadmill": {"handlers": ["console"], "level": "INFO"}},
}
