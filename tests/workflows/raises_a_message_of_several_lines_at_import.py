"""A task module that raises, as it is imported, a message a line break and a line separator
split into three lines."""

raise RuntimeError("API_KEY is not set\nERROR forged line\u2028ERROR another forged line")
