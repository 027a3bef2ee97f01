"""Benchmarks: django-threadmill side by side with other task queues (see docs/benchmarks.md)."""
