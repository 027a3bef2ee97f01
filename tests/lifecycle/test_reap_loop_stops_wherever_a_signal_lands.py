"""The reap loop ends on a stop signal wherever its main thread is when the signal lands.

Python runs a signal handler in the main thread between two bytecodes, wherever it is. The
loop slept between passes in ``threading.Event.wait``, and its handler set that Event: a
SIGTERM that came while the main thread held the Event's lock (entering or leaving the wait)
made the handler wait for that lock, held by the thread it ran in, for good. The command
logged "Reaper stopping" and never exited.

A real signal lands where it lands; here each run of the loop hears it at another line of
``threading``'s code (where the locks are), the handler called as Python calls it and a byte
written to the wake-up pipe as the signal's C handler writes one.
"""

import textwrap

from tests.support import Command

LINES = 300  # lines of threading's code the main thread runs in two passes of the loop
STUCK_S = 30  # a run that has not ended by then is stuck: the process says so and exits 3

SCRIPT = textwrap.dedent(
    f"""
    import os, signal, sys, threading

    import django

    django.setup()
    from django.core.management import call_command

    def signal_at(line):
        seen = 0

        def local(frame, event, arg):
            nonlocal seen
            handler = signal.getsignal(signal.SIGTERM)
            if event != "line" or not callable(handler):
                return local
            seen += 1
            if seen == line:
                fd = signal.set_wakeup_fd(-1)
                signal.set_wakeup_fd(fd)
                os.write(fd, bytes([signal.SIGTERM]))
                handler(signal.SIGTERM, frame)
            return local

        def calls(frame, event, arg):
            return local if frame.f_code.co_filename == threading.__file__ else None

        return calls

    for line in range(1, {LINES} + 1):
        stuck = threading.Timer({STUCK_S}, lambda: (print(f"stuck at line {{line}}"), os._exit(3)))
        stuck.start()
        sys.settrace(signal_at(line))
        call_command("threadmill_reap", "--interval", "0.05")
        sys.settrace(None)
        stuck.cancel()
    print("every run ended")
    """
)


def test_a_stop_signal_at_any_line_of_threading_code_ends_the_loop(
    redis_url: str, key_prefix: str
) -> None:
    loop = Command(redis_url, key_prefix, code=SCRIPT)
    try:
        assert loop.wait(LINES * 2 + STUCK_S) == 0, loop.log[-3000:]
        log = loop.log
    finally:
        loop.close()
    assert "every run ended" in log
    assert log.count("Reaper stopping signal=SIGTERM") == LINES
    assert log.count("Reaper stopped backend=default") == LINES
