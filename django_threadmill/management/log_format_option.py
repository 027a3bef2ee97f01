"""The ``--log-format`` option of the commands that run until stopped: the worker and the reaper."""

from argparse import ArgumentParser


def add_log_format_option(parser: ArgumentParser) -> None:
    """Add ``--log-format``, which ``worker/logs.logging_configured`` reads: text or JSON lines."""
    parser.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="text lines, or one JSON object per line for a log shipper (default: text).",
    )
