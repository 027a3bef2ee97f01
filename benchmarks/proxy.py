"""The delay proxy's old import path, kept for tests/faults/test_slow_redis.py.

The proxy lives in benchmarks/harness/proxy.py; this module goes once that test imports it there.
"""

from .harness.proxy import ProxyLink, delay_proxy

__all__ = ["ProxyLink", "delay_proxy"]
