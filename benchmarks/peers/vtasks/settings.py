"""A small Django project for django-vtasks: ValkeyTaskBackend on the benchmark's Redis."""

from ..django_settings import *  # noqa: F403
from ..django_settings import REDIS_URL, sqlite_database

INSTALLED_APPS = ["django_vtasks"]
# Its enqueue pushes in transaction.on_commit, which needs a database connection.
DATABASES = {"default": sqlite_database("vtasks.sqlite3")}
TASKS = {
    "default": {
        "BACKEND": "django_vtasks.backends.valkey.ValkeyTaskBackend",
        "OPTIONS": {"BROKER_URL": REDIS_URL},
    }
}
