"""``Messages.sorted``: creation order, ties by source, stable, whichever way it sorts (one
int64 key when time x nodes fits, ``lexsort`` otherwise)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.plugin.components import Messages


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 5)), max_size=40),
       st.sampled_from([0, 1 << 40, 1 << 61]))
def test_sorted_is_lexsort_by_time_then_source_and_stable(rows, offset):
    t = np.array([r[0] for r in rows], dtype=np.int64) + offset  # 1 << 61: the key overflows
    s = np.array([r[1] for r in rows], dtype=np.int32)
    ids = np.arange(len(rows))
    m = Messages(t, s, ids.astype(np.int32), ids.astype(np.int64)).sorted()
    o = np.lexsort((s, t))
    assert (m.time_ps == t[o]).all() and (m.src == s[o]).all() and (m.dst == o).all()
