"""Shipped validation suites (``*.crossval.yaml``): see docs/crossval.md."""
