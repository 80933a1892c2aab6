"""A compiled routing for tests/test_nic_counters.py whose NIC hook logs every NIC's counters,
read through :func:`federation.engine.api.nic_counter` at each injection: what a controller
reading them during the run sees.  Kept apart from the test module so that editing the tests
does not recompile the loop (the loop's digest covers the routing's module)."""

from __future__ import annotations

import numpy as np
from numba import njit

from federation.engine import api


@njit(cache=True)
def route(sim, tables, r, ip, pk):
    return -1, 0  # one router: the loop ejects every packet itself, this is never called


@njit(cache=True)
def inject(sim, tables, node, pk):
    """Row ``i`` of ``log`` (``i``: the injections so far): time, injecting node, then each
    node's four counters (``api.NC_*`` order) as they stand now."""
    log = tables[0]
    i = tables[1][0]
    tables[1][0] = i + 1
    if i >= log.shape[0]:
        return
    log[i, 0] = api.now(sim)
    log[i, 1] = node
    n = (log.shape[1] - 2) // api.NC_COLS
    for m in range(n):
        for k in range(api.NC_COLS):
            log[i, 2 + m * api.NC_COLS + k] = api.nic_counter(sim, m, k)


def tables(n_nodes: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    return (np.zeros((rows, 2 + n_nodes * api.NC_COLS), dtype=np.int64),
            np.zeros(1, dtype=np.int64))
