"""A small Django project for django-tasks-redis: RedisTaskBackend with its defaults."""

from ..django_settings import *  # noqa: F403
from ..django_settings import REDIS_URL, sqlite_database

INSTALLED_APPS = ["django_tasks_redis"]
DATABASES = {"default": sqlite_database("tasks_redis.sqlite3")}
TASKS = {
    "default": {
        "BACKEND": "django_tasks_redis.RedisTaskBackend",
        "OPTIONS": {"REDIS_URL": REDIS_URL},
    }
}
