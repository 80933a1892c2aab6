"""Skeleton ``caffe``: data-parallel training in the style of Intel Caffe in the many-node
paper: gradients reduced up a binary tree to rank 0, new weights broadcast back down it, with
an encode and a decode at each end of every hop.

The many-node paper (Eyerman et al., sections 3.3 and 5.1) describes Intel Caffe's
communication as a binary-tree reduction and broadcast of the weights, rank 0 the root that
computes the new weights, with encode/decode routines at the endpoints (which never run on a
single node), so its time grows with the depth of the tree.  Ranks form a binary tree in heap
order (rank r's children 2r+1, 2r+2).  Each iteration::

    compute (forward and backward pass of a minibatch)
    up:   per child (left, then right): recv model_bytes, decode;  then encode, send to parent
    root: update (compute)
    down: recv model_bytes from the parent, decode;  encode, isend to each child, wait

Docs: ``docs/skeletons/caffe.md``.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from federation import WorkloadContext, hookimpl
from federation.models.units import ByteCount
from federation.plugins.workloads.programs_build import check_size
from federation.plugins.workloads.skeleton_base import (
    Skeleton,
    SkeletonParams,
    Writer,
    compute_field,
    phase_mean_ps,
)
from federation.programs.compute_time import ComputeTime
from federation.programs.model import RECV, SEND


class CaffeParams(SkeletonParams):
    model_bytes: ByteCount = Field(16.0 * 2**20, description="bytes of the gradients and of "
                                   "the weights (one message per hop)")
    compute: ComputeTime = compute_field("forward and backward pass per iteration")
    encode: ComputeTime = compute_field("encode before each send")
    decode: ComputeTime = compute_field("decode after each receive")
    update: ComputeTime = compute_field("the root's weight update")


class Caffe(Skeleton):
    """Binary-tree reduce and broadcast with encode/decode (see the module docstring)."""

    name = "caffe"
    Params = CaffeParams
    params: CaffeParams
    source = "many-node paper (Intel Caffe)"

    def setup(self, n: int, w: Writer) -> None:
        p = self.params
        r = np.arange(n, dtype=np.int64)
        self.parent = (r - 1) // 2
        self.kids = [r * 2 + 1, r * 2 + 2]
        self.phases = {name: w.phase(getattr(p, name), name)
                       for name in ("compute", "encode", "decode", "update")}

    def check_sizes(self, n: int, ctx: WorkloadContext) -> None:
        check_size(int(self.params.model_bytes), ctx, "model_bytes", "model_bytes")

    def ops_per_iteration(self, n: int) -> int:
        return n * 12

    def mean_compute_ps(self, w: Writer) -> float:
        ph = self.phases
        return phase_mean_ps(ph["compute"]) + phase_mean_ps(ph["update"]) + \
            4 * (phase_mean_ps(ph["encode"]) + phase_mean_ps(ph["decode"]))

    def iteration(self, w: Writer, it: int) -> None:
        n = w.n
        size = int(self.params.model_bytes)
        ph = self.phases
        r = w.everyone
        w.compute(ph["compute"])
        for kid in self.kids:
            has = r[kid < n]
            if has.size:
                w.asm.op(has, RECV, kid[has], size, 0)
                w.compute(ph["decode"], has)
        up = r[1:]
        w.compute(ph["encode"], up)
        if up.size:
            w.asm.op(up, SEND, self.parent[up], size, 0)
        w.compute(ph["update"], r[:1])
        if up.size:
            w.asm.op(up, RECV, self.parent[up], size, 1)
        w.compute(ph["decode"], up)
        inner = r[self.kids[0] < n]
        w.compute(ph["encode"], inner)
        handles = []
        for kid in self.kids:
            has = r[kid < n]
            if has.size:
                handles.append((has, w.asm.op(has, SEND, kid[has], size, 1, blocking=False)))
        for has, h in handles:
            w.asm.wait(has, h)

    def meta(self, n: int) -> dict:
        return {"tree_depth": int(n).bit_length() - 1 if n > 1 else 0}


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(Caffe)
