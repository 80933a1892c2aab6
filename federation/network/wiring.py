"""Global cables of group-structured topologies (1-D dragonfly, Aries, megafly): how many
global ports a group uses, and which port of which group each one reaches.

Router ``r`` (index inside its group) owns global ports ``r*h .. r*h + h-1``.  With ``m``
links per pair of groups (``links_per_pair``, default ``a*h // (g-1)``) a group uses
``U = m*(g-1)`` of its ``a*h`` global ports; the ``s = a*h - U`` *spare* ports stay
**unconnected** (they still count in the radix).  Spare ports are taken from the end, one per
router starting with the last router (SST merlin's rule), so with ``s <= a`` the last ``s``
routers each leave their last global port empty; used ports are numbered ``q = 0 .. U-1`` in
router order.  Example: 64 groups of 16 routers with ``h = 4`` (the thesis machine) has 64
global ports per group for 63 other groups: one link per pair, router 15 of every group leaves
one global port empty.

Each arrangement maps used port ``q`` of group ``i`` to a group ``t`` and a port ``q'`` there.
Write ``d = q mod (g-1)`` (the group offset rank) and ``c = q // (g-1)`` (the copy, 0..m-1):

* ``absolute`` (default; CODES, SST merlin ``absolute``): ``t = d`` if ``d < i`` else ``d + 1``
  (the other groups in increasing order); ``q' = i' + c*(g-1)`` where ``i' = i`` if ``i < t``
  else ``i - 1``.  Group 0's ports go to groups 1, 2, ...; every group's port ``d`` goes to the
  ``d``-th other group.
* ``relative`` (SST merlin ``relative``): ``t = (i + d + 1) mod g``; ``q' = (g-2-d) + c*(g-1)``.
  Port ``k`` of every group goes to the group ``k + 1`` places further round the ring of groups.
* ``circulant`` (the *palm-tree* arrangement of M. Garcia's thesis and Camarero, Vallejo and
  Beivide, ACM TACO 11(4), 2014): ``t = (i - d - 1) mod g``; ``q' = U - 1 - q``.  With one link
  per pair (``g = a*h + 1``) this is the palm tree: port ``k`` of router ``r`` in group ``i``
  reaches port ``h-1-k`` of router ``a-1-r`` in group ``i - (r*h + k) - 1``; the wiring is
  invariant under the rotation ``i -> i+1`` of the groups (a circulant arrangement).

Every arrangement is an involution on the used ports (a cable is the pair ``(i, q), (t, q')``),
never connects a group to itself and connects every pair of groups exactly ``m`` times.  The
parameters are rejected with a message naming them when ``g - 1 > a*h`` or
``links_per_pair * (g-1) > a*h``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from federation.errors import TopologyError

Arrangement = Literal["absolute", "relative", "circulant"]
ARRANGEMENT_FIELD_DOC = (
    "global-link arrangement: absolute (CODES/merlin default), relative (merlin), "
    "circulant (palm-tree of Camarero et al.)"
)


def check_global_ports(owners: int, per_owner: int, groups: int, links_per_pair: int | None,
                       names: str) -> str | None:
    """Error message when ``owners*per_owner`` global ports per group cannot connect every pair
    of ``groups`` groups ``links_per_pair`` times; ``names`` spells the product for the user."""
    if groups < 2:
        return None
    ports = owners * per_owner
    if groups - 1 > ports:
        return (f"{groups} groups need at least g-1 = {groups - 1} global ports per group to "
                f"connect every pair of groups, but {names} = {ports}")
    if links_per_pair is not None and links_per_pair * (groups - 1) > ports:
        return (f"links_per_pair={links_per_pair} with {groups} groups needs "
                f"links_per_pair*(g-1) = {links_per_pair * (groups - 1)} global ports per "
                f"group, but {names} = {ports} (at most {ports // (groups - 1)} links per pair)")
    return None


@dataclass(frozen=True)
class GlobalWiring:
    """Global cables of a group-structured topology, one row per cable (each listed once).

    ``*_owner`` is the index of the owning router among a group's global-port owners (dragonfly:
    the router index; megafly: the spine index), ``*_port`` the used-port number ``q``.
    """

    src_group: np.ndarray
    src_owner: np.ndarray
    src_port: np.ndarray
    dst_group: np.ndarray
    dst_owner: np.ndarray
    dst_port: np.ndarray
    links_per_pair: int
    spare_per_group: int
    used_per_owner: np.ndarray  # global ports used on each owner (spare ones excluded)


def global_wiring(owners: int, per_owner: int, groups: int, arrangement: str = "absolute",
                  links_per_pair: int | None = None) -> GlobalWiring:
    """All global cables of the arrangement (see the module docstring for the definitions)."""
    g = groups
    empty = np.zeros(0, dtype=np.int64)
    if g < 2:
        return GlobalWiring(empty, empty, empty, empty, empty, empty, 0,
                            owners * per_owner, np.zeros(owners, dtype=np.int64))
    msg = check_global_ports(owners, per_owner, g, links_per_pair, "global ports per group")
    if msg:
        raise TopologyError(msg)
    ports = owners * per_owner
    m = links_per_pair if links_per_pair is not None else ports // (g - 1)
    used = m * (g - 1)
    spare = ports - used
    # spare ports: one per owner from the last owner backwards, then again
    back = owners - 1 - np.arange(owners)
    skip = spare // owners + (back < spare % owners)
    used_per_owner = (per_owner - skip).astype(np.int64)
    owner_of_q = np.repeat(np.arange(owners), used_per_owner)
    q = np.tile(np.arange(used), g)
    i = np.repeat(np.arange(g), used)
    d = q % (g - 1)
    c = q // (g - 1)
    if arrangement == "absolute":
        t = d + (d >= i)
        q2 = (i - (i > t)) + c * (g - 1)
    elif arrangement == "relative":
        t = (i + d + 1) % g
        q2 = (g - 2 - d) + c * (g - 1)
    elif arrangement == "circulant":
        t = (i - d - 1) % g
        q2 = used - 1 - q
    else:
        raise TopologyError(
            f"unknown arrangement {arrangement!r} (known: absolute, relative, circulant)")
    keep = i < t  # t != i always: each cable once, from its lower group
    return GlobalWiring(
        src_group=i[keep], src_owner=owner_of_q[q[keep]], src_port=q[keep],
        dst_group=t[keep], dst_owner=owner_of_q[q2[keep]], dst_port=q2[keep],
        links_per_pair=m, spare_per_group=spare, used_per_owner=used_per_owner,
    )


def global_cable_count(owners: int, per_owner: int, groups: int,
                       links_per_pair: int | None = None) -> int:
    """Number of cables :func:`global_wiring` lays, from the counts alone.

    Every pair of groups is joined ``links_per_pair`` times whatever the arrangement, so the
    count is known without enumerating ports; :meth:`Topology.size` needs it before anything is
    allocated.  Raises the :class:`TopologyError` that :func:`global_wiring` would raise.
    """
    if groups < 2:
        return 0
    msg = check_global_ports(owners, per_owner, groups, links_per_pair, "global ports per group")
    if msg:
        raise TopologyError(msg)
    m = links_per_pair if links_per_pair is not None else owners * per_owner // (groups - 1)
    return m * groups * (groups - 1) // 2
