"""Standalone measurements, each run as ``python -m benchmarks.probes.<name>`` in the repo root."""
