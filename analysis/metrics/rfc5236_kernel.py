"""Compiled loops of the RFC 5236 metrics (numba accelerator of ``analysis.metrics.reordering``).

Import this module only when numba is installed: ``reordering`` imports it lazily for long streams and otherwise runs
its Python loops ``_rd_freq_py`` / ``_rbd_freq_py``, which are the authors' pseudo-code statement by statement (see
the docstring of ``analysis.metrics.reordering``).  These kernels execute the same statements on int64 arrays
instead of Python sets and deques; tests/test_metrics_vectorised_equal.py requires identical frequencies (and runs
the kernels' Python source, ``.py_func``, as well).
"""
import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)


@_jit
def _ring_has(win, head, cnt, cap, v) -> bool:
    for q in range(cnt):
        if win[(head + q) % cap] == v:
            return True
    return False


@_jit
def _ring_min(win, head, cnt, cap):
    m = win[head]
    for q in range(1, cnt):
        x = win[(head + q) % cap]
        if x < m:
            m = x
    return m


@_jit
def rd_kernel(s, dt, dout, vmax):
    """:func:`_rd_freq_py` on int64 arrays: window = FIFO ring of at most DT+1 values, buffer = unordered array
    (its values lie in [RI, RI+DT]); the D of every counted packet is written to ``dout`` (<= n of them). Returns
    their number, or -1 when the pseudo-code would loop forever (RI beyond every sequence number while neither
    window nor buffer holds RI)."""
    n = s.shape[0]
    cap = min(dt + 1, n)
    if cap < 1:
        return 0
    k = 0
    win = np.empty(cap, np.int64)
    head = 0
    cnt = 0
    buf = np.empty(n + 1, np.int64)
    nb = 0
    p = 0
    while p < n and cnt < dt + 1:  # Step 1: the first DT+1 distinct arrivals
        v = s[p]
        p += 1
        if not _ring_has(win, head, cnt, cap, v):
            win[(head + cnt) % cap] = v
            cnt += 1
    if cnt == 0:
        return 0
    ri = _ring_min(win, head, cnt, cap)
    while cnt > 0:
        kb = -1
        for q in range(nb):
            if buf[q] == ri:
                kb = q
                break
        if kb >= 0 or _ring_has(win, head, cnt, cap, ri):
            x = win[head]
            head = (head + 1) % cap
            cnt -= 1
            d = ri - x
            if abs(d) <= dt:
                dout[k] = d
                k += 1
                if kb >= 0:  # buffer.discard(ri)
                    nb -= 1
                    buf[kb] = buf[nb]
                if d < 0:  # buffer.add(x)
                    have = False
                    for q in range(nb):
                        if buf[q] == x:
                            have = True
                            break
                    if not have:
                        buf[nb] = x
                        nb += 1
                ri += 1
            while p < n:  # next arrival that is neither below RI nor in the buffer or the window
                v = s[p]
                p += 1
                if v < ri:
                    continue
                inb = False
                for q in range(nb):
                    if buf[q] == v:
                        inb = True
                        break
                if inb or _ring_has(win, head, cnt, cap, v):
                    continue
                win[(head + cnt) % cap] = v
                cnt += 1
                break
        else:
            m = _ring_min(win, head, cnt, cap)
            for q in range(nb):
                if buf[q] < m:
                    m = buf[q]
            if ri < m:
                ri = m
            else:
                ri += 1
                if ri > vmax:
                    return -1
    return k


@_jit
def _heap_push(h, nh, v):
    i = nh
    h[i] = v
    while i > 0:
        par = (i - 1) // 2
        if h[par] <= h[i]:
            break
        t = h[par]
        h[par] = h[i]
        h[i] = t
        i = par
    return nh + 1


@_jit
def _heap_pop(h, nh):
    nh -= 1
    h[0] = h[nh]
    i = 0
    while True:
        a = 2 * i + 1
        if a >= nh:
            break
        if a + 1 < nh and h[a + 1] < h[a]:
            a += 1
        if h[i] <= h[a]:
            break
        t = h[a]
        h[a] = h[i]
        h[i] = t
        i = a
    return nh


@_jit
def rbd_kernel(r, nu, bt, hist):
    """:func:`_rbd_freq_py` on the ranks ``r`` (0..nu-1) of the sequence numbers: window = FIFO ring of at most
    BT+1 values, buffer = min-heap plus membership flags; hist[B] counts B."""
    n = r.shape[0]
    cap = min(bt + 1, n)
    if cap < 1:
        return 0
    win = np.empty(cap, np.int64)
    head = 0
    cnt = 0
    inwin = np.zeros(nu, np.bool_)
    inbuf = np.zeros(nu, np.bool_)
    heap = np.empty(n + 1, np.int64)
    nh = 0
    p = 0
    while p < n and cnt < bt + 1:
        v = r[p]
        p += 1
        if not inwin[v]:
            win[(head + cnt) % cap] = v
            cnt += 1
            inwin[v] = True
    while cnt > 0:
        e = _ring_min(win, head, cnt, cap)
        x = win[head]
        head = (head + 1) % cap
        cnt -= 1
        inwin[x] = False
        if x == e:
            if cnt > 0:
                wmin = _ring_min(win, head, cnt, cap)
            else:
                wmin = e
            while nh > 0:
                m = heap[0]
                if cnt > 0 and wmin < m:
                    m = wmin
                if inbuf[m]:
                    inbuf[m] = False
                    nh = _heap_pop(heap, nh)
                else:
                    break
            if cnt > 0:
                e = wmin
        elif not inbuf[x]:
            inbuf[x] = True
            nh = _heap_push(heap, nh, x)
        hist[nh] += 1
        while p < n:
            v = r[p]
            p += 1
            if not (v <= e or inwin[v] or inbuf[v]):
                win[(head + cnt) % cap] = v
                cnt += 1
                inwin[v] = True
                break
    return 0
