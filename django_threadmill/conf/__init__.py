"""Configuration: one ``TASKS`` entry read into typed settings, once, at the settings edge."""
