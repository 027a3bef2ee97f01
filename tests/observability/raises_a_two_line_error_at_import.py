"""A task module that raises a message of two lines while it is imported."""

raise RuntimeError("API_KEY is not set\nINFO forged line")
