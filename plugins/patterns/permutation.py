"""Pattern ``random_permutation``: every node sends to one partner, the partners a random
permutation of the job's nodes without fixed points; with ``rotate_bytes``, re-drawn as the
megafly QoS paper's background does (Mubarak et al., section IV-C: "each node sends to one
random destination until a byte threshold, then picks a new one").

::

    pattern: {kind: random_permutation}                      # one permutation for the run
    pattern: {kind: random_permutation, rotate_bytes: 1MiB}  # a new one every MiB a node sent

Every ``ceil(rotate_bytes / message size)`` messages a node moves on to the next permutation of
a sequence drawn once, in order, from the pattern's own stream: node ``i``'s ``k``-th message
goes to ``perm[k // per][i]``.  Nodes injecting at the same rate move on together, so at any
time the partners are (nearly) a permutation, and each node's partner changes after every
``rotate_bytes`` it sent, whatever the batches the traffic is drawn in.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from federation import Params, PatternContext, TrafficPattern
from federation.models.units import ByteCount


class PermutationParams(Params):
    rotate_bytes: ByteCount | None = Field(
        None, description="a node's partner is re-drawn after every this many bytes it sent "
        "(default: never)")


def derangement(rng: np.random.Generator, n: int) -> np.ndarray:
    """A uniformly random permutation of ``n`` (at least 2) without fixed points, by
    rejection (about e draws on average)."""
    while True:
        p = rng.permutation(n)
        if not (p == np.arange(n)).any():
            return p


def rank_within(src: np.ndarray) -> np.ndarray:
    """For each entry, how many earlier entries have the same value (vectorised)."""
    order = np.argsort(src, kind="stable")
    s = src[order]
    starts = np.concatenate([[True], s[1:] != s[:-1]]) if s.size else np.zeros(0, bool)
    idx = np.arange(s.shape[0])
    first = np.maximum.accumulate(np.where(starts, idx, 0)) if s.size else idx
    out = np.empty_like(idx)
    out[order] = idx - first
    return out


class RandomPermutation(TrafficPattern):
    """A random permutation of the job's nodes, optionally re-drawn every ``rotate_bytes``."""

    name = "random_permutation"
    Params = PermutationParams
    params: PermutationParams

    def numbers_messages(self) -> bool:
        return self.params.rotate_bytes is not None  # it counts the bytes a node sent

    def start(self, ctx: PatternContext, rng: np.random.Generator):  # noqa: ANN201
        n = ctx.n_nodes
        own = np.random.default_rng(int(rng.integers(0, 2**63)))
        rotate = self.params.rotate_bytes
        per = max(1, -(-int(rotate) // int(ctx.message_size))) if rotate else None
        perms = {0: derangement(own, n)}  # by epoch; those no node can reach again dropped
        drawn = [0]  # epochs drawn so far, minus one
        sent = np.zeros(n, dtype=np.int64)

        def draw(src: np.ndarray) -> np.ndarray:
            src = np.asarray(src, dtype=np.int64)
            if per is None:
                return perms[0][src]
            k = sent[src] + rank_within(src)
            np.add.at(sent, src, 1)
            epoch = k // per
            while drawn[0] < int(epoch.max(initial=0)):
                drawn[0] += 1
                perms[drawn[0]] = derangement(own, n)
            dst = np.empty_like(src)
            for e in np.unique(epoch).tolist():
                sel = epoch == e
                dst[sel] = perms[e][src[sel]]
            low = int((sent // per).min())
            for e in [e for e in perms if e < low]:
                del perms[e]
            return dst
        return draw
