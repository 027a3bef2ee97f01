"""Register the admin's placeholder models (unmanaged: no table is created)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies = []

    operations = [
        migrations.CreateModel(
            name="Queue",
            fields=[
                ("id", models.AutoField(primary_key=True, serialize=False, verbose_name="ID")),
            ],
            options={
                "verbose_name": "queue",
                "verbose_name_plural": "queues",
                "managed": False,
                "default_permissions": ("view", "change"),
            },
        ),
        migrations.CreateModel(
            name="Task",
            fields=[
                ("id", models.AutoField(primary_key=True, serialize=False, verbose_name="ID")),
            ],
            options={
                "verbose_name": "task",
                "verbose_name_plural": "tasks",
                "managed": False,
                "default_permissions": ("view", "change"),
            },
        ),
    ]
