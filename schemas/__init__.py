"""Machine and experiment files shipped with hpc-federation, and the exported JSON Schema.

In the repository this is the top-level ``schemas/`` folder; it installs as
``federation.schemas`` so that no generic top-level name reaches site-packages.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def quickstart_path() -> Path:
    """The experiment ``federation run`` runs when given no file."""
    return HERE / "quickstart.yaml"


def machines_dir() -> Path:
    return HERE / "machines"
