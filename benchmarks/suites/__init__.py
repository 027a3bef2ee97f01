"""The pytest suites `pytest benchmarks` collects (bench_*.py): drain, latency, enqueue bursts."""
