"""The calendar queue's bucket sort (:func:`federation.engine.queue_sort.sort_unsorted`, which
``open_bucket`` calls for a bucket not in order): a bucket's events come out in key order, ties
in the order they were pushed, whatever mix of times and scheduling numbers they hold,
including a time's events pushed across a wrap of the scheduling number (``seq mod
2**SEQ_BITS``), which makes that time's group two sorted runs, the later one first in key
order. The sort's parts run as Python here (``py_func``): the same code numba compiles into the
loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.engine import queue_sort as Q

WRAP = 1 << Q.SEQ_BITS


@pytest.fixture(autouse=True)
def _python_parts(monkeypatch):  # noqa: ANN001, ANN202
    for name in ("sort_unsorted", "merge_range", "run_end", "insert_back",
                 "_merge", "copy_row"):
        monkeypatch.setattr(Q, name, getattr(Q, name).py_func)


def _sorted(events: list[tuple[int, int, int]], shift: int) -> list[tuple[int, int, int]]:
    n = len(events)
    run = np.zeros((n + 8, 3), dtype=np.int64)
    run[:n] = events
    tmp = np.zeros_like(run)
    hist = np.zeros(2048, dtype=np.int64)
    pairs = zip(events[:-1], events[1:], strict=True)
    if any(a[0] > b[0] for a, b in pairs):  # a bucket out of order, as open_bucket calls it
        Q.sort_unsorted(run, tmp, hist, n, shift)
    assert not hist.any()  # left as found, for the next bucket
    return [tuple(int(v) for v in row) for row in run[:n]]


def test_a_group_pushed_across_a_wrap_comes_out_in_key_order():
    """2,000 events of one time (a booksim_iq cycle's), pushed as the scheduling number
    wrapped: the 1,200 pushed after the wrap have the smaller keys and come first.  (The
    insertion sort this replaced moved each of them past the 800 others: 960,000 moves.)"""
    t = 3_921_000
    seqs = [WRAP - 800 + i for i in range(800)] + list(range(1200))
    events = [((t << Q.SEQ_BITS) | s, i, 7) for i, s in enumerate(seqs)]
    out = _sorted(events, shift=9)
    assert [e[1] for e in out] == list(range(800, 2000)) + list(range(800))
    assert [e[0] for e in out] == sorted(e[0] for e in events)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_bucket_comes_out_as_a_stable_sort_by_key(data) -> None:  # noqa: ANN001
    """Random buckets (small ones take the merge sort, large ones the counting pass first,
    on all the offset's bits up to a shift of 11, on its top 11 bits above): key order, ties
    (equal keys, pushed ``2**SEQ_BITS`` apart) in bucket order."""
    shift = data.draw(st.integers(6, 20), label="shift")
    n = data.draw(st.integers(1, 1500), label="events")
    base = data.draw(st.integers(0, 1 << 20), label="bucket") << shift
    start = data.draw(st.integers(0, WRAP - 1), label="first seq")
    few = data.draw(st.lists(st.integers(0, (1 << shift) - 1), min_size=1, max_size=3),
                    label="few times")  # crowded bins: the merge sort inside the pass
    offset = st.sampled_from(few) if data.draw(st.booleans(), label="crowded") else \
        st.integers(0, (1 << shift) - 1)
    times = data.draw(st.lists(offset, min_size=n, max_size=n), label="offsets")
    tie = data.draw(st.booleans(), label="a tie")
    seqs = [(start + i) % WRAP for i in range(n)]
    if tie and n > 1:
        seqs[-1] = seqs[0]  # the same number a wrap later
        times[-1] = times[0]
    events = [(((base + x) << Q.SEQ_BITS) | s, i, -i) for i, (x, s) in
              enumerate(zip(times, seqs, strict=True))]
    assert _sorted(events, shift) == sorted(events, key=lambda e: e[0])
