"""django-threadmill: a durable, fast Redis backend for Django's task framework."""

__version__ = "0.1.0"
