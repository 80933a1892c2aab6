"""The calendar queue's bucket sort (:mod:`federation.engine.queue`): when a ring bucket
is opened, its events, appended in scheduling order, are put in key order (time, then
scheduling number modulo ``2**SEQ_BITS``) in the run the loop pops from.  Every step is
stable, so equal keys (pushed ``2**SEQ_BITS`` apart) keep their bucket order."""

from __future__ import annotations

import numpy as np

from federation.engine.jit import part
from federation.models.limits import HEAP_SEQ_BITS

SEQ_BITS = HEAP_SEQ_BITS
#: events of one bin (of one time, up to a shift of 11) up to which an insertion sort puts
#: them in key order (larger bins: a natural merge sort, linear when the number wrapped)
GROUP_INSERT = 32


@part
def sort_unsorted(run, tmp, hist, n, shift):
    """Sort ``run[:n]`` (one bucket of ``2**shift`` ps, known not to be in order:
    ``queue.open_bucket`` counts its descents as it copies it, so a sorted bucket, most of
    BookSim's, is never read again) by key.

    Large buckets are spread by the top bits (at most 11) of their times' offset in the bucket
    into ``tmp`` with one stable counting pass (no data-dependent branch), then each bin is
    put in key order on its way back: a few events by an insertion sort, more (booksim_iq's
    thousands per cycle) by a natural merge sort, which merges in one pass the two sorted
    runs of a time whose events were pushed across a wrap of the scheduling number (the key
    holds it modulo ``2**SEQ_BITS``; the later run comes first), where the insertion sort
    moved each event of one past every event of the other (a third of booksim_iq's loop
    time). Every step is stable, so equal keys keep their order in the bucket. (Two passes,
    sorting on all the offset's bits and then each time's events, cost twice as much on the
    CODES scenario, whose 64 ns buckets hold about 3,000 events of as many times.) Small
    buckets get the natural merge sort alone. ``hist`` is all zeros between calls."""
    if n < 64 or (np.int64(1) << min(shift, 11)) > 4 * n:
        merge_range(run, tmp, 0, n)
        return
    w = min(np.int64(11), shift)
    lo = shift - w
    mask = (np.int64(1) << w) - 1
    width = np.int64(1) << w
    for i in range(n):
        hist[((run[i, 0] >> SEQ_BITS) >> lo) & mask] += 1
    total = np.int64(0)
    for d in range(width):
        c = hist[d]
        hist[d] = total
        total += c
    for i in range(n):
        d = ((run[i, 0] >> SEQ_BITS) >> lo) & mask
        o = hist[d]
        hist[d] = o + 1
        copy_row(run, i, tmp, o)
    start = np.int64(0)
    for d in range(width):  # hist[d] is now the end of bin d
        end = hist[d]
        hist[d] = 0
        if end - start > GROUP_INSERT:
            for i in range(start, end):
                copy_row(tmp, i, run, i)
            merge_range(run, tmp, start, end)
        else:
            insert_back(run, tmp, start, end)
        start = end


@part
def insert_back(run, tmp, lo, hi):
    """``tmp[lo:hi]`` into ``run[lo:hi]`` in key order, stably: an insertion sort on the way
    (a bin of a few events)."""
    for a in range(lo, hi):
        k0 = tmp[a, 0]
        k1 = tmp[a, 1]
        k2 = tmp[a, 2]
        b = a
        while b > lo and run[b - 1, 0] > k0:
            copy_row(run, b - 1, run, b)
            b -= 1
        run[b, 0] = k0
        run[b, 1] = k1
        run[b, 2] = k2


@part
def run_end(src, i, hi):
    """The end of the sorted run of ``src`` that starts at ``i`` (``i < hi``)."""
    j = i + 1
    while j < hi and src[j - 1, 0] <= src[j, 0]:
        j += 1
    return j


@part
def merge_range(run, tmp, lo, hi):
    """Sort ``run[lo:hi]`` by key, stably (``tmp[lo:hi]`` its scratch): a natural merge sort,
    each pass merging neighbouring sorted runs.  A sorted range costs one pass, no copy."""
    src = run
    dst = tmp
    in_tmp = False
    while True:
        i = lo
        j = run_end(src, lo, hi)
        if j >= hi:
            break  # sorted
        while True:  # merge [i, j) with the run after it, [j, k)
            k = run_end(src, j, hi) if j < hi else j
            _merge(src, dst, i, j, k)
            i = k
            if i >= hi:
                break
            j = run_end(src, i, hi)
        src, dst = dst, src
        in_tmp = not in_tmp
    if in_tmp:
        for i in range(lo, hi):
            copy_row(tmp, i, run, i)


@part
def _merge(src, dst, i, j, k):
    """Merge ``src[i:j]`` and ``src[j:k]`` (each sorted) into ``dst[i:k]``, left first on
    ties."""
    a = i
    b = j
    o = i
    while a < j and b < k:
        if src[b, 0] < src[a, 0]:
            copy_row(src, b, dst, o)
            b += 1
        else:
            copy_row(src, a, dst, o)
            a += 1
        o += 1
    while a < j:
        copy_row(src, a, dst, o)
        a += 1
        o += 1
    while b < k:
        copy_row(src, b, dst, o)
        b += 1
        o += 1


@part
def copy_row(src, i, dst, j):
    """Event ``src[i]`` (key and two payload words) to ``dst[j]``."""
    dst[j, 0] = src[i, 0]
    dst[j, 1] = src[i, 1]
    dst[j, 2] = src[i, 2]
