"""Compiled helpers for the equal-cost port masks of :mod:`federation.network.equal_cost`: the
routings that choose among every minimal port (``minimal`` spreading, ``aries``,
``prog_adaptive``) count a mask's ports, take its ``k``-th, and hash a packet to one."""

from __future__ import annotations

import numpy as np

from federation.engine.jit import part


@part
def mask_count(m):
    """How many ports a mask holds (set bits)."""
    n = 0
    while m:
        n += 1
        m &= m - np.uint64(1)
    return n


@part
def mask_nth(m, k):
    """Bit index of the ``k``-th port of mask ``m`` (``0 <= k < mask_count(m)``): the router's
    cable port ``port[first[r] + mask_nth(m, k)]``."""
    i = 0
    while True:
        if m & np.uint64(1):
            if k == 0:
                return i
            k -= 1
        m >>= np.uint64(1)
        i += 1


@part
def mix_hash(a, b):
    """A fixed 64-bit mix of two integers, for deterministic spreading.  Its constants are
    below 2**63: numba types larger literals as floats, which loses the low bits (a hash
    built that way spread the megafly's ports so badly that it accepted 0.121 instead of
    0.386)."""
    h = np.uint64(a) * np.uint64(0x5851F42D4C957F2D) + np.uint64(b) * np.uint64(
        0x14057B7EF767814F)
    h ^= h >> np.uint64(29)
    h *= np.uint64(0x3C79AC492BA7B653)
    h ^= h >> np.uint64(32)
    return h
