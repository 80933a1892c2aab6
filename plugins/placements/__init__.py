"""Built-in placement policies (a job's ``placement.kind``): which nodes of the machine a job
gets.  One module per family: :mod:`.simple` (``contiguous``, ``list``, ``rest``, ``all``),
:mod:`.random` (``random_nodes``, ``random_routers``, ``random_groups``, ``geometric``),
:mod:`.mappings` (the circulant thesis' job mappings ``ring``, ``hierarchical_tree``,
``circulant_stride``).  Registered through the ``placements`` entry point, exactly as a
third-party placement would be.
"""

from __future__ import annotations

from federation import hookimpl
from federation.plugins.placements.mappings import CirculantStride, HierarchicalTree, Ring
from federation.plugins.placements.random import (
    Geometric,
    RandomGroups,
    RandomNodes,
    RandomRouters,
)
from federation.plugins.placements.simple import AllNodes, Contiguous, Listed, Rest

__all__ = ["AllNodes", "CirculantStride", "Contiguous", "Geometric", "HierarchicalTree",
           "Listed", "RandomGroups", "RandomNodes", "RandomRouters", "Rest", "Ring"]


@hookimpl
def federation_register_placements(register) -> None:  # noqa: ANN001
    for cls in (Contiguous, Listed, Rest, AllNodes, RandomNodes, RandomRouters, RandomGroups,
                Geometric, Ring, HierarchicalTree, CirculantStride):
        register(cls)
