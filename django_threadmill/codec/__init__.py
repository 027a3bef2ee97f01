"""What the broker stores, and how it maps to and from django.tasks objects (JSON client-side)."""
