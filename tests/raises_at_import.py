"""A task module that raises while it is imported, as one from a bad deploy does."""

raise RuntimeError("settings.PAYMENT_API_KEY is not set")
