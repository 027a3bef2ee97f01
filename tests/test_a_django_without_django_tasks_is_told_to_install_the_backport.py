"""Django 5.2 has no ``django.tasks``: installed without the ``backport`` extra, the package
ended every command in ``ModuleNotFoundError: No module named 'django_tasks'``, which named
neither the extra nor the setting to add."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Neither django.tasks (Django 6.0+) nor django_tasks (the backport) can be imported: a name
# set to None in sys.modules is one Python does not find.
WITHOUT_EITHER = """
import sys
sys.modules["django.tasks"] = None
sys.modules["django_tasks"] = None
import django_threadmill.compat
"""


def test_a_django_without_django_tasks_is_told_to_install_the_backport() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", WITHOUT_EITHER],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 1
    last_line = ran.stderr.strip().splitlines()[-1]
    assert last_line.startswith(
        "django_threadmill.exceptions.ImproperlyConfiguredThreadmill: django-threadmill needs "
        "Django's task framework: django.tasks, built into Django 6.0 and later, or on Django "
    ), ran.stderr
    assert last_line.endswith(
        ", the django-tasks backport. Install it with pip install "
        "\"django-threadmill[backport]\" and add 'django_tasks' to INSTALLED_APPS."
    ), ran.stderr
