"""The file formats: units, engine limits and the static pydantic models of machine and
experiment files.

Stage: *load* (first half).  Owns what a file may say and how a value is read (``units``,
``base``: strict documents, ``read_document``), what the engine can represent (``limits``), and
the models of machine and experiment files (``machine``, ``experiment``).  Component parameters
are validated later by their plugin's ``Params`` (:mod:`federation.pipeline.load`).

May import: :mod:`federation.errors` only.
"""
