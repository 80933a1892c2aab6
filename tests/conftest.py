"""Shared fixtures.  Tests never auto-load third-party plugins installed on the machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("FEDERATION_DISABLE_PLUGIN_AUTOLOAD", "1")

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def plugins():
    """A freshly loaded plugin manager (built-ins only)."""
    from federation.manager import FederationPlugins

    return FederationPlugins()


@pytest.fixture
def write(tmp_path):
    """Write a text file under tmp_path and return its path: write('m.yaml', text)."""

    def _write(name: str, text: str) -> Path:
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return p

    return _write
