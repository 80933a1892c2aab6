"""The compiled replay of :func:`federation.programs.matching.blocked`: which begin and finish
events of a program can happen.  A module of its own so that importing the programs package
(every run does, through the workload plugins) does not import numba, which only a closed-loop
run's preflight needs."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["replay"]


@njit(cache=True)
def replay(n_ops, dep_before, dep_after, dep_kind, send, recv, rdv):  # noqa: ANN001, ANN202
    """Kahn's algorithm over begin (2i) and finish (2i + 1) events: an event happens once
    every event it waits for has; None when all happen, else which did.  Linear in
    operations and edges, compiled and in int32 (half the memory traffic), because a
    million-operation program is checked before every run."""
    n = 2 * n_ops
    i32 = np.int32
    wait = np.zeros(n, dtype=i32)
    first = np.zeros(n + 1, dtype=i32)  # successors of event v: succ[first[v]:first[v + 1]]
    m = dep_before.shape[0]
    for e in range(m):  # a FINISH edge leaves the finish event, a START edge the begin
        first[2 * dep_before[e] + (1 if dep_kind[e] == 0 else 0) + 1] += 1
        wait[2 * dep_after[e]] += 1
    for i in range(n_ops):  # begin -> own finish
        first[2 * i + 1] += 1
        wait[2 * i + 1] += 1
    for k in range(send.shape[0]):  # a send's begin -> its receive's finish, and for a
        first[2 * send[k] + 1] += 1  # rendezvous the receive's begin -> the send's finish
        wait[2 * recv[k] + 1] += 1
        if rdv[k]:
            first[2 * recv[k] + 1] += 1
            wait[2 * send[k] + 1] += 1
    for v in range(n):
        first[v + 1] += first[v]
    fill = first[:-1].copy()
    succ = np.empty(first[n], dtype=i32)
    for e in range(m):
        v = 2 * dep_before[e] + (1 if dep_kind[e] == 0 else 0)
        succ[fill[v]] = 2 * dep_after[e]
        fill[v] += 1
    for i in range(n_ops):
        succ[fill[2 * i]] = 2 * i + 1
        fill[2 * i] += 1
    for k in range(send.shape[0]):
        v = 2 * send[k]
        succ[fill[v]] = 2 * recv[k] + 1
        fill[v] += 1
        if rdv[k]:
            v = 2 * recv[k]
            succ[fill[v]] = 2 * send[k] + 1
            fill[v] += 1
    queue = fill  # reused: every slot of fill has been written for the last time
    tail = 0
    for v in range(n):
        if wait[v] == 0:
            queue[tail] = v
            tail += 1
    head = 0
    while head < tail:
        v = queue[head]
        head += 1
        for j in range(first[v], first[v + 1]):
            w = succ[j]
            wait[w] -= 1
            if wait[w] == 0:
                queue[tail] = w
                tail += 1
    if tail == n:
        return None
    done = np.zeros(n, dtype=np.bool_)
    for j in range(tail):
        done[queue[j]] = True
    return done
