"""The package version, in a module of its own so that every layer can read it without
importing the public API (``federation/__init__``), which sits above the pipeline."""

__version__ = "0.1.0"
