"""Let ``dumpdata --all`` read the placeholder models through their manager of no rows: their
base manager (models.py). Options only: no table and no SQL."""

from django.db import migrations

OPTIONS = {
    "base_manager_name": "objects",
    "default_permissions": ("view", "change"),
    "managed": False,
}


class Migration(migrations.Migration):
    dependencies = [("django_threadmill", "0001_initial")]

    operations = [
        migrations.AlterModelOptions(
            name="queue",
            options={**OPTIONS, "verbose_name": "queue", "verbose_name_plural": "queues"},
        ),
        migrations.AlterModelOptions(
            name="task",
            options={**OPTIONS, "verbose_name": "task", "verbose_name_plural": "tasks"},
        ),
    ]
