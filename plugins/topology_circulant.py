"""Topology plugin module (being written; registers nothing yet)."""
