"""Progress of a running task: ``report_progress`` inside it, ``progress_of`` (or
``aprogress_of``) from outside.

docs/lifecycle.md, Progress: how reports are coalesced, where they are stored, what a crash
loses.
"""

from ..codec.progress import Progress
from .read import aprogress_of, progress_of
from .report import NOTE_MAX_CHARS, report_progress

__all__ = ["NOTE_MAX_CHARS", "Progress", "aprogress_of", "progress_of", "report_progress"]
