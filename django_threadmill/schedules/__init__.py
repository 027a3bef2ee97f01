"""Periodic tasks from ``OPTIONS["schedules"]``, fired by every supervisor, each slot once."""
