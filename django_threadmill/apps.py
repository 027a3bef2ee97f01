"""App config: lets the admin section and management commands be found."""

from django.apps import AppConfig


class ThreadmillConfig(AppConfig):
    name = "django_threadmill"
    verbose_name = "Threadmill"
    default_auto_field = "django.db.models.AutoField"
