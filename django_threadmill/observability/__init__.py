"""What the package tells the outside: django.tasks signals, traces and Prometheus metrics."""
