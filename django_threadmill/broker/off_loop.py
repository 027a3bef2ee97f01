"""Run the blocking part of an async call in a worker thread, so that its event loop goes on.

The translation of a failed call's error may probe the server at LOCATION (wrong_server.py)
or ask the sentinels (no_primary.py) on blocking sockets, for seconds: on the caller's loop
(``aenqueue`` in an ASGI view) that held every other coroutine of the process meanwhile
(docs/enqueue.md, What each error means, and what was written).
"""

import asyncio
import threading
from collections.abc import Callable


async def off_the_loop[T](call: Callable[[], T]) -> T:
    """Return ``call()``, run in the running loop's default executor.

    Once the interpreter shuts down (the main thread has ended: an ``atexit`` handler's
    ``aenqueue``) no new thread starts, and ``call`` runs here instead: the loop is ending
    then anyway, and the pool's RuntimeError would replace the error that says the fix.
    """
    if not threading.main_thread().is_alive():
        return call()
    return await asyncio.to_thread(call)
