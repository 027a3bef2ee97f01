"""A small Django project for django-tasks-db: DatabaseBackend on SQLite."""

from ..django_settings import *  # noqa: F403
from ..django_settings import sqlite_database
from . import DB_NAME

INSTALLED_APPS = ["django_tasks_db"]
DATABASES = {"default": sqlite_database(DB_NAME)}
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
