"""The enqueue pipeline: prepare, coalesce and store tasks; announce the ones stored."""
