"""Built-in traffic patterns (``synthetic``'s ``pattern``): where each message of a node goes,
in the job's own node numbers.  :mod:`.basic` (``uniform``, ``group_shift`` and its alias
``worst_case``, ``shift``, ``tornado``, ``bit_complement``, ``transpose``),
:mod:`.permutation` (``random_permutation``, optionally re-drawn every ``rotate_bytes``),
:mod:`.targets` (``hotspot``, ``incast``, ``all_to_all``), :mod:`.spatial`
(``nearest_neighbor`` on a 3-D grid, ``fixed_hop_pairs``).  Registered through the
``patterns`` entry point, as a third-party pattern would be.
"""

from __future__ import annotations

from federation import hookimpl
from federation.plugins.patterns.basic import (
    BitComplement,
    GroupShift,
    Shift,
    Tornado,
    Transpose,
    Uniform,
    WorstCase,
)
from federation.plugins.patterns.permutation import RandomPermutation
from federation.plugins.patterns.spatial import FixedHopPairs, NearestNeighbor
from federation.plugins.patterns.targets import AllToAll, Hotspot, Incast

__all__ = ["AllToAll", "BitComplement", "FixedHopPairs", "GroupShift", "Hotspot", "Incast",
           "NearestNeighbor", "RandomPermutation", "Shift", "Tornado", "Transpose", "Uniform",
           "WorstCase"]


@hookimpl
def federation_register_patterns(register) -> None:  # noqa: ANN001
    for cls in (Uniform, GroupShift, WorstCase, Shift, Tornado, BitComplement, Transpose,
                RandomPermutation, Hotspot, Incast, AllToAll, NearestNeighbor, FixedHopPairs):
        register(cls)
