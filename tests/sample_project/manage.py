#!/usr/bin/env python
"""The sample project's manage.py: ``python manage.py test`` runs its Django TestCases."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sample.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
