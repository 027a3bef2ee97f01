"""A worker process stops on a stop signal wherever its main thread is when the signal lands.

Python runs a signal handler in the main thread between two bytecodes, wherever it is. The
reaper's handler set a ``threading.Event`` its main thread waited on, and a SIGTERM that came
while that thread held the Event's lock deadlocked it for good
(tests/lifecycle/test_reap_loop_stops_wherever_a_signal_lands.py). The worker's handler sets
plain flags and its main thread sleeps on the wake-up pipe (docs/worker.md, Signals reach the
main thread): here each run of a real ``--burst`` worker process, in this process's main
thread as ``--processes 0`` runs it, hears SIGTERM at another place, the handler called as
Python calls it and a byte written to the wake-up pipe as the signal's C handler writes one.

The places are the lines the main thread runs, once its handler is set, in the stop's own
code (process.py, shutdown.py, wakeup.py, signal_flag.py, interruptible.py, stop_calls.py)
and in ``threading`` and ``selectors``, where it holds locks and sleeps: start-up, the wait,
and the stop that a burst's empty queues began. The other worker modules the stop calls take
only their own locks, which no handler takes, and reach the library's through
``threading``; ``logging``, which the handler calls, holds reentrant locks. A place is a line
and the path through process.py and shutdown.py that led to it (``wait`` waits at start-up
and for the stop), and each run hears the signal at the first place no run heard it yet,
until a run meets none: every place is tried once, in about 600 runs.
"""

import textwrap

from tests.support import Command

MAX_RUNS = 1500  # far more than the places there are: a run that keeps finding new ones fails
STUCK_S = 30  # a run that has not ended by then is stuck: the process says where and exits 3
RUNS_S = 100  # every run together; short of pytest's timeout (120 s), so a failure shows the log

SCRIPT = textwrap.dedent(
    f"""
    import faulthandler, os, selectors, signal, sys, threading

    import django

    django.setup()
    from django_threadmill.compat import TaskResultStatus, task_backends
    from django_threadmill.worker import (
        interruptible, process, shutdown, signal_flag, stop_calls, wakeup
    )
    from django_threadmill.worker.interruptible import STOP_SIGNALS
    from django_threadmill.worker.process import WorkerProcess
    from tests.worker import tasks
    from tests.worker.support import worker_options

    STOPS_CODE = (process, shutdown, wakeup, signal_flag, interruptible, stop_calls)
    PATHS = {{process.__file__, shutdown.__file__}}
    TRACED = {{module.__file__ for module in (threading, selectors, *STOPS_CODE)}}
    SETTLED = {{TaskResultStatus.SUCCESSFUL, TaskResultStatus.READY}}
    backend = task_backends["default"]
    leases = backend.broker.queue_keys("default").leases
    tried = set()

    def place(frame):
        path, caller = [], frame
        while caller is not None:
            if caller.f_code.co_filename in PATHS:
                path.append(caller.f_code.co_name)
            caller = caller.f_back
        return frame.f_code.co_filename, frame.f_lineno, tuple(path)

    def signal_at_a_new_place(worker, heard):
        def local(frame, event, arg):
            handler = signal.getsignal(signal.SIGTERM)
            if event != "line" or heard or getattr(handler, "__self__", None) is not worker:
                return local
            where = place(frame)
            if where not in tried:
                tried.add(where)
                heard.append(where)
                fd = signal.set_wakeup_fd(-1)
                if fd != -1:
                    signal.set_wakeup_fd(fd, warn_on_full_buffer=False)
                    os.write(fd, bytes([signal.SIGTERM]))
                handler(signal.SIGTERM, frame)
                sys.settrace(None)  # one signal a run: the rest of it runs at full speed
            return local

        def calls(frame, event, arg):
            return local if frame.f_code.co_filename in TRACED else None

        return calls

    def stuck(heard):
        print(f"stuck after a signal at {{heard}}", flush=True)
        faulthandler.dump_traceback(all_threads=True)
        os._exit(3)

    def run_once(number):
        results = [tasks.square.enqueue(n) for n in range(2)]
        worker = WorkerProcess(worker_options(burst=True), backend)
        handlers = {{signum: signal.getsignal(signum) for signum in STOP_SIGNALS}}
        heard = []
        deadline = threading.Timer({STUCK_S}, stuck, [heard])
        deadline.start()
        sys.settrace(signal_at_a_new_place(worker, heard))
        try:
            code = worker.run()
        finally:
            sys.settrace(None)
            deadline.cancel()
            for signum, handler in handlers.items():
                signal.signal(signum, handler)
        states = {{backend.get_result(result.id).status for result in results}}
        held = backend.broker.client.zcard(leases)
        if code != 0 or not states <= SETTLED or held:
            said = f"exit code {{code}}, tasks {{states}}, {{held}} leases left"
            sys.exit(f"run {{number}}, signal at {{heard}}: {{said}}")
        return bool(heard)

    runs = 1
    while run_once(runs):
        runs += 1
        if runs > {MAX_RUNS}:
            sys.exit(f"still new places after {MAX_RUNS} runs")
    paths = {{path for _, _, path in tried}}
    missing = {{("wait", "run"), ("stop", "run"), ("run", "stop", "run")}} - paths
    if missing:
        sys.exit(f"no signal tried in {{missing}}")
    print(f"every run ended: {{len(tried)}} places tried in {{runs}} runs")
    """
)


def test_a_stop_signal_at_any_place_of_the_stops_code_stops_the_worker(
    redis_url: str, key_prefix: str
) -> None:
    runs = Command(redis_url, key_prefix, code=SCRIPT)
    try:
        assert runs.wait(RUNS_S) == 0, runs.log[-5000:]
        log = runs.log
    finally:
        runs.close()
    ended = log.splitlines()[-1]
    assert ended.startswith("every run ended: "), log[-5000:]
    places, runs_count = (int(word) for word in ended.split() if word.isdigit())
    assert runs_count == places + 1  # the last run met no new place: the burst stopped it
    assert log.count("Stopping on SIGTERM") == places
    assert "Traceback" not in log
