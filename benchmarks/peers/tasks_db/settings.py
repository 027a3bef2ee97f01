"""A small Django project for django-tasks-db: DatabaseBackend on SQLite, or on PostgreSQL."""

import os
from urllib.parse import urlsplit

from ..django_settings import *  # noqa: F403
from ..django_settings import sqlite_database
from . import DB_NAME

INSTALLED_APPS = ["django_tasks_db"]
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

if database_url := os.environ.get("BENCH_DATABASE_URL"):
    _url = urlsplit(database_url)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": _url.path.lstrip("/"),
            "USER": _url.username or "",
            "PASSWORD": _url.password or "",
            "HOST": _url.hostname or "",
            "PORT": str(_url.port or ""),
        }
    }
else:
    DATABASES = {"default": sqlite_database(DB_NAME)}
