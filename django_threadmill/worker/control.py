"""What a supervisor and its worker processes say on the control socket between them, one
byte a message (worker/slots.py forks each process with its socket)."""

STOP = b"s"  # to a process: stop gracefully
RECYCLING = b"r"  # to the supervisor: this process recycles, start its replacement now
# To the supervisor: Redis took this process's first renewal, so threadmill_health counts it.
# The supervisor then tells the process it replaces REPLACED.
COUNTED = b"c"
# To a recycling process: its replacement counts, so it may sign off. Until then it waits, still
# renewing (worker/shutdown.py): signed off first, its host read live=0 between the two, and a
# probe called a healthy worker unhealthy.
REPLACED = b"p"
# To the supervisor, the exit code (one byte) after it: the process ends with it on purpose. A
# code of the worker's own (0, 1, 3, 4, 6) counts only if said: a task's os._exit(4) had the
# supervisor stop every process for good (worker/slots.py).
ENDING = b"e"
# To the supervisor: a SIGTERM sent to this process alone asked it to stop, not the supervisor.
# It replaces the process however its stop ends (0, 1, 6), and a --burst goes on: an exit 0
# alone read as the burst's end, with the tasks it handed back left READY.
ASKED_ALONE = b"a"
