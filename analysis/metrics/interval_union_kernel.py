"""Compiled loop of ``analysis.metrics.retransmissions.retransmission_mask`` (numba accelerator).

Import this module only when numba is installed: ``retransmissions`` imports it lazily for long flows and otherwise
uses its numpy path.  The kernel is the definition's loop itself (``_retransmission_mask_loop``: a sorted list of
disjoint covered intervals, one binary search per segment, merge on insert) on int64 arrays instead of Python lists;
tests/test_metrics_vectorised_equal.py requires identical masks.
"""
import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _bisect_right(a, k, x):
    lo, hi = 0, k
    while lo < hi:
        mid = (lo + hi) // 2
        if x < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@numba.njit(cache=True, nogil=True)
def _bisect_left(a, k, x):
    lo, hi = 0, k
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def retransmission_kernel(s, e, has, out):
    """out[i] = True when segment i (has[i]: payload > 0) lies inside the union of the earlier segments' ranges."""
    n = s.shape[0]
    starts = np.empty(n + 1, np.int64)   # disjoint, sorted covered intervals [starts[j], ends[j]), j < k
    ends = np.empty(n + 1, np.int64)
    k = 0
    for i in range(n):
        if not has[i]:
            continue
        a = s[i]
        b = e[i]
        j = _bisect_right(starts, k, a) - 1
        if j >= 0 and ends[j] >= b:
            out[i] = True
            continue
        lo = _bisect_left(ends, k, a)     # first interval that may touch
        hi = _bisect_right(starts, k, b)  # intervals before hi may touch
        if lo < hi:
            if starts[lo] < a:
                a = starts[lo]
            if ends[hi - 1] > b:
                b = ends[hi - 1]
        else:
            hi = lo                       # Python's lst[lo:hi] = [x] with hi <= lo inserts x at lo
        # replace intervals lo .. hi-1 by the single interval [a, b)
        shift = 1 - (hi - lo)
        if shift > 0:
            for q in range(k - 1, hi - 1, -1):
                starts[q + shift] = starts[q]
                ends[q + shift] = ends[q]
        elif shift < 0:
            for q in range(hi, k):
                starts[q + shift] = starts[q]
                ends[q + shift] = ends[q]
        starts[lo] = a
        ends[lo] = b
        k += shift
    return k
