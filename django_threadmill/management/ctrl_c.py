"""A Ctrl-C that ends an operator's command run from ``manage.py``: one line and the shell's
exit code, not Python's KeyboardInterrupt traceback.

An operator presses Ctrl-C when a command waits on a Redis that does not answer (frozen,
overloaded, black-holed): ``threadmill_queue damaged`` or ``threadmill_schedules`` then ended in
40 lines of redis-py's frames, which said neither what was left undone nor that nothing was.
"""

import signal

from django.core.management.base import BaseCommand

INTERRUPTED = 128 + signal.SIGINT  # 130: the code a shell gives a command Ctrl-C ended


class CtrlCSaid(BaseCommand):
    """A command that a KeyboardInterrupt ends with ``interrupted`` on stderr and exit code 130.

    ``call_command`` is left to raise KeyboardInterrupt to its caller, whose Ctrl-C it is.
    """

    interrupted = "Interrupted (SIGINT) where it was: it only reads, so nothing was changed."

    def run_from_argv(self, argv: list[str]) -> None:
        try:
            super().run_from_argv(argv)
        except KeyboardInterrupt:
            self.stderr.write(self.interrupted)
            raise SystemExit(INTERRUPTED) from None
