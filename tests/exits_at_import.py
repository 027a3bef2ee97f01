"""A task module that exits while it is imported, as a script's parse_args() at import does."""

raise SystemExit(2)
