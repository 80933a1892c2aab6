"""What a run leaves behind: the results document's model, tables spooled to disk and the
output folder.

Stage: *outputs*.  Owns ``model`` (``results.json`` as pydantic models), ``spool`` (tables
written a chunk at a time, in key order) and ``outputs`` (the folder: checked before the run,
filled point by point, swapped in whole, kept and marked incomplete when a run stops early).

May import: :mod:`federation.errors`, :mod:`federation.models`.
"""
