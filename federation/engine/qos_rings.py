"""The rings of sends of a sliding window (``bandwidth_caps`` with ``window_kind:
sliding``, :mod:`federation.engine.qos`): how long one can get, and how the driver grows them.

Each (port, class) keeps its sends of the last window in a ring of ``K`` slots
(``QosState.ring_t`` / ``ring_b``, one ``K`` for all rings, at every port of the network),
which starts at :data:`RING_START` slots and grows when one fills.  A ring's length has an
exact bound (:func:`ring_entries`): the memory check before the run
(:func:`federation.pipeline.bounds.ring_memory`) takes it for the machine's ports, and
:func:`grow_rings` never grows past it, so a run whose packets are no smaller than the check
assumed holds no more than the check allowed (:func:`ring_peak_slots`).

Here, apart from the compiled arbitration of :mod:`federation.engine.qos`, because nothing
here is compiled: the pipeline reads the bound without the loop's code.  The state is typed
``Any``: it is a ``QosState``, whose module imports this one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: slots each sliding window's ring starts with (``new_state``'s ``ring``)
RING_START = 8
#: bytes per slot of a ring: its send's time and its bytes (``ring_t``, ``ring_b``: int64)
RING_SLOT_BYTES = 16
#: ring slots :func:`grow_rings` copies at once (bounds its scratch arrays: 24 B a slot)
_GROW_BLOCK = 1 << 18


def ring_entries(capb: np.ndarray | int, port_ser: np.ndarray | float, window_ps: int,
                 smallest: int) -> np.ndarray:
    """The most sends a sliding window's ring holds after a send, at a port of ``port_ser``
    ps per byte, for a class of byte cap ``capb`` (:func:`federation.engine.qos.cap_bytes`),
    when every packet is at least ``smallest`` B: the one bound of :func:`grow_rings` and of
    the memory check before the run, so that the two cannot disagree.  The smaller of:

    * the cap: ``count_send`` drops the oldest send while the others still reach the cap, so
      all sends but the oldest sum to less than it: ``(n - 1) x smallest <= capb - 1``,
      ``n <= ceil(capb / smallest)`` (1 for a cap of 0 B);
    * the window: ``caps_pick`` expires the sends of ``W`` ps ago before every send at the
      port, so the sends kept are younger than ``W``; and a port starts one packet at a time,
      the next no sooner than the last one's serialisation, ``int(smallest x port_ser +
      0.5)`` ps as the loop rounds it (``d``): ``n <= (W - 1) // d + 1``.
    """
    s = max(1, int(smallest))
    cap = np.asarray(capb, dtype=np.int64)
    by_cap = np.maximum(1, -(-cap // s))
    d = np.floor(np.minimum(s * np.asarray(port_ser, dtype=np.float64) + 0.5, 2.0**62))
    d = d.astype(np.int64)
    by_time = (int(window_ps) - 1) // np.maximum(d, 1) + 1
    return np.where(d >= 1, np.minimum(by_cap, by_time), by_cap)


def ring_peak_slots(k: int) -> int:
    """Slots per ring held at once when the rings need at most ``k`` slots (the most sends
    of :func:`ring_entries`, plus the one ``count_send`` writes before it drops the oldest):
    the :data:`RING_START` they start with; or, once they grow, the grown rings (at most
    ``k``: :func:`grow_rings` stops at the bound) beside the ones they are copied from
    (fewer than ``k``): ``2k - 1``."""
    return RING_START if k <= RING_START else 2 * k - 1


def _full_rings_need(st: Any, rings: np.ndarray, K: int) -> int:
    """Slots the full ``rings`` (each holding ``K`` sends) may come to need: the bound of
    :func:`ring_entries`, plus one, for packets no smaller than each ring's smallest send so
    far (a smaller packet later fills a ring again, and the bound is taken again then)."""
    C = int(st.n_classes)
    smallest = st.ring_b.reshape(-1, K)[rings].min(axis=1)
    ports = rings // C
    timed = st.ring_ser.shape[0] > int(ports.max())  # ring_ser is set by run_state
    need = 0
    for i, o, s in zip(rings, ports, smallest, strict=True):
        ser = float(st.ring_ser[o]) if timed else 0.0  # 0: no window bound
        need = max(need, int(ring_entries(st.capb[i], ser, int(st.window), int(s))) + 1)
    return need


def grow_rings(st: Any) -> Any:
    """``st`` with every ring longer (entries kept in order from slot 0): twice as long, but
    no longer than the bound (:func:`ring_entries`) of the rings that filled, so that the
    rings never pass the memory checked before the run (:func:`ring_peak_slots`).  A full
    ring holds ``K`` sends within its bound, so the bound is above ``K``: it always grows."""
    K = int(st.ring_k[0])
    done = np.zeros(1, dtype=np.int64)
    full = np.flatnonzero(st.ring_n >= K)
    if full.size == 0:  # nothing to grow (the flag is set only when a ring fills)
        return st._replace(full=done)
    K2 = min(2 * K, _full_rings_need(st, full, K))
    if K2 <= K:
        raise AssertionError(f"a sliding window's ring is full at {K} sends, past its bound")
    n_rings = st.ring_head.shape[0]
    nt = np.zeros((n_rings, K2), dtype=np.int64)
    nb = np.zeros((n_rings, K2), dtype=np.int64)
    step = max(1, _GROW_BLOCK // K)  # a block at a time: the scratch stays small
    for a in range(0, n_rings, step):
        b = min(n_rings, a + step)
        src = (np.arange(a, b)[:, None] * K
               + (st.ring_head[a:b, None] + np.arange(K)[None, :]) % K)
        nt[a:b, :K] = st.ring_t[src]
        nb[a:b, :K] = st.ring_b[src]
    return st._replace(ring_t=nt.reshape(-1), ring_b=nb.reshape(-1),
                       ring_head=np.zeros(n_rings, dtype=np.int64),
                       ring_k=np.array([K2], dtype=np.int64), full=done)
