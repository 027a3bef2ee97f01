"""Schedule tests share the worker tests' helper that starts the real command."""

from tests.worker.conftest import start_worker

__all__ = ["start_worker"]
