"""A program, as ``python -m`` runs one: importing it runs it, and it leaves a marker file."""

import os
from pathlib import Path

if marker := os.environ.get("THREADMILL_PROGRAM_MARKER"):
    Path(marker).write_text("ran")
