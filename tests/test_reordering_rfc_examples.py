"""Reordering metrics checked against the published texts of their definitions.

Sources actually read for these tests (see the module docstring of analysis/metrics/reordering.py):

* RFC 5236 RD / RBD: the algorithm pseudo-code published by the RFC's authors (Colorado State
  University CNRL, http://www.cnrl.colostate.edu/Projects/PacketReordering/rd_algo.txt and
  rbd_algo.txt).  Below, ``_rd_reference`` / ``_rbd_reference`` transcribe that pseudo-code line by
  line (including the literal ``RI = 1``), and the implementation must agree with them on every
  stream, including streams with losses, duplicates and displacements beyond the threshold.
* RFC 4737: Section 3 (Type-P-Reordered via NextExp), 4.1 (ratio, "R = (Count of packets with
  Type-P-Reordered=TRUE) / ( L ) * 100", duplicates removed so L <= K), 4.2 (extent), 5
  (n-reordering); transcribed literally in ``_rfc4737_reference``.
* A worked RD example published in a review of reordering metrics (Hindawi, J. Computer Networks and
  Communications 2020, "Packet Reordering Metrics to Enable Performance Comparison in IP-Networks",
  Table 1): arrival 1,6,7,2,3,4,5,8 -> displacements 0,-4,-4,2,2,2,2,0.

The numeric examples printed inside RFC 5236 and RFC 4737 themselves could not be retrieved in the
session that wrote these tests (only the first page of each RFC was reachable), so none of them is
encoded here: no number below is claimed to be an RFC-published answer unless it is derived from the
definitions above.
"""
import random
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from analysis.metrics.reordering import rfc4737, rfc5236_rbd, rfc5236_rd, tcp_reordering


# ------------------------------------------------------------ literal transcriptions (test oracles)

def _rd_reference(stream, DT):
    """RD pseudo-code, transcribed statement by statement ("ALGORITHM FOR COMPUTING REORDER DENSITY").
    Returns the raw frequencies FLE[D]."""
    arrivals = iter(stream)
    window, buffer, FLE = [], [], Counter()
    # Step 1. Initialize: Store first unique DT+1 sequence numbers in arriving order into window; RI = 1;
    for v in arrivals:
        if v not in window:
            window.append(v)
        if len(window) == DT + 1:
            break
    RI = 1

    def get_next_arrival():
        # do { newS = new sequence from arriving stream; if (newS == null) return null; }
        # while (newS < RI or newS in buffer or newS in window);
        for newS in arrivals:
            if not (newS < RI or newS in buffer or newS in window):
                return newS
        return None

    if not window:
        return FLE
    while True:                                       # Step 2. Repeat:
        if RI in window or RI in buffer:              # If (window or buffer contains sequence number RI)
            S = window.pop(0)                         # Copy first sequence number in window to S; delete it
            D = RI - S                                # D = RI - S; # compute displacement
            if abs(D) <= DT:                          # If (absolute(D) <= DT) # Apply threshold
                FLE[D] += 1                           # FLE[D]++;
                if RI in buffer:                      # If (buffer contains sequence number RI)
                    buffer.remove(RI)                 #   Delete RI from buffer;
                if D < 0:                             # If (D < 0) # Early Arrival
                    buffer.append(S)                  #   add S to empty slot in buffer;
                RI += 1                               # RI++;
            # Else # Displacement beyond threshold. { Discard S; }
            newS = get_next_arrival()
            if newS is not None:
                window.append(newS)
            if not window:                            # if (window is empty) go to step 3;
                return FLE
        else:                                         # Else # RI not found. Get next RI value.
            m = min(window + buffer)                  # m = minimum (minimum (window), minimum (buffer));
            RI = m if RI < m else RI + 1              # If (RI < m) RI = m; Else RI++;


def _rbd_reference(stream, BT):
    """RBD pseudo-code ("ALGORITHM TO COMPUTE REORDER BUFFER-OCCUPANCY DENSITY"), returns FB[B]."""
    arrivals = iter(stream)
    window, buffer, FB = [], [], Counter()
    # 1. Initialize. Store first unique BT+1 sequence numbers in arriving order into window;
    for v in arrivals:
        if v not in window:
            window.append(v)
        if len(window) == BT + 1:
            break
    if not window:
        return FB
    while True:                                       # 2. Repeat.
        E = min(window)                               # E = smallest sequence number in window;
        S = window.pop(0)                             # S = first sequence number in window; delete it
        if S == E:                                    # If (S == E) # Next expected packet arrived.
            while buffer:                             # Repeat { If (buffer not empty) {
                M = min(window + buffer)              #   M = smallest sequence number in window and buffer;
                if M in buffer:                       #   If (M is present in buffer) Delete M from buffer;
                    buffer.remove(M)
                else:                                 #   Else break loop;
                    break
            if window:                                # E = smallest sequence number in window;
                E = min(window)                       # (window empty only once the stream has ended)
        else:
            buffer.append(S)                          # Else add S to buffer; # S is an early arrival.
        FB[len(buffer)] += 1                          # B = number of occupied slots in buffer; FB[B]++;
        # Do { newS = get next incoming sequence number; }
        # While (newS is valid and (newS <= E or newS is in window or buffer));
        for newS in arrivals:
            if not (newS <= E or newS in window or newS in buffer):
                window.append(newS)                   # If (newS is valid) { Add newS to window; }
                break
        if not window:                                # If (window is empty) go to step 3;
            return FB


def _rfc4737_reference(stream, n=3):
    """RFC 4737, literally: duplicates -> only the first copy is analysed; NextExp rule (sec. 3);
    extent e = i - j, j the earliest receive index with s[j] > s[i] (sec. 4.2); n-reordered iff
    s[j] > s[i] for all j with i-n <= j < i (sec. 5)."""
    seen, s = set(), []
    for v in stream:
        if v not in seen:
            seen.add(v)
            s.append(v)
    NextExp = None
    reordered, extents, nreo = [], [], 0
    for i, v in enumerate(s):
        if NextExp is None or v >= NextExp:
            NextExp = v + 1
            continue
        reordered.append(i)
        j = min(k for k in range(i) if s[k] > v)
        extents.append(i - j)
        if i - n >= 0 and all(s[k] > v for k in range(i - n, i)):
            nreo += 1
    return len(s), len(stream) - len(s), len(reordered), extents, nreo


def _random_stream(rng, n):
    """1..n with local reordering, losses and duplicates (numbers as sent at the source)."""
    seq = list(range(1, n + 1))
    for _ in range(rng.randint(0, n)):                # local swaps / longer displacements
        a = rng.randrange(n)
        b = min(n - 1, a + rng.randint(1, 8))
        seq[a], seq[b] = seq[b], seq[a]
    seq = [v for v in seq if rng.random() > 0.1]      # ~10 % loss
    out = []
    for v in seq:
        out.append(v)
        if rng.random() < 0.05:                       # duplicate, now or a little later
            out.insert(max(0, len(out) - rng.randint(0, 4)), v)
    return out


# ------------------------------------------------------------ RFC 5236: implementation == pseudo-code

@pytest.mark.parametrize("thr", [0, 1, 2, 3, 5, 8])
def test_rd_equals_published_pseudocode(thr):
    rng = random.Random(5236 + thr)
    for _ in range(300):
        s = _random_stream(rng, rng.randint(1, 60))
        assert rfc5236_rd(s, dt=thr, counts=True) == dict(sorted(_rd_reference(s, thr).items())), s


@pytest.mark.parametrize("thr", [0, 1, 2, 3, 5, 8])
def test_rbd_equals_published_pseudocode(thr):
    rng = random.Random(4737 + thr)
    for _ in range(300):
        s = _random_stream(rng, rng.randint(1, 60))
        assert rfc5236_rbd(s, bt=thr, counts=True) == dict(sorted(_rbd_reference(s, thr).items())), s


def test_rd_rbd_normalised_by_sum_of_frequencies():
    # "Step 3. Normalize FLE to get RD" / "3. Normalize FB to get RBD": densities sum to 1
    s = [1, 2, 4, 5, 3, 7, 6, 9, 8, 8, 12, 10, 11]
    for f, kw in ((rfc5236_rd, {"dt": 3}), (rfc5236_rbd, {"bt": 3})):
        cnt = f(s, counts=True, **kw)
        dens = f(s, **kw)
        tot = sum(cnt.values())
        assert dens == pytest.approx({k: v / tot for k, v in cnt.items()})
        assert sum(dens.values()) == pytest.approx(1.0)


def test_rd_sign_convention_review_example():
    # Hindawi 2020 review, Table 1: arrived 1,6,7,2,3,4,5,8; received index 1..8;
    # displacement 0,-4,-4,2,2,2,2,0 (D = RI - S: negative = early, positive = late).
    # All |D| <= 4, so with DT = 4 every packet is counted.
    assert rfc5236_rd([1, 6, 7, 2, 3, 4, 5, 8], dt=4, counts=True) == {-4: 2, 0: 2, 2: 4}
    # with DT = 3, 6 and 7 (D = -4) are beyond the threshold and discarded ("Discard S"): RI then
    # reaches 6 and 7 in neither window nor buffer and moves on; 2..5 are in order, 8 too.
    assert rfc5236_rd([1, 6, 7, 2, 3, 4, 5, 8], dt=3, counts=True) == {0: 6}


def test_rd_early_beyond_threshold_is_discarded_not_late():
    # 10 arrives 8 early (D = 2 - 10 = -8 < -DT): the pseudo-code discards it (it is not counted
    # as early, and not later as anything else: when RI reaches 10 it is in neither window nor buffer).
    assert rfc5236_rd([1, 10, 2, 3, 4, 5, 6, 7, 8, 9], dt=3, counts=True) == {0: 9}


def test_rd_duplicates_are_ignored():
    # get_next_arrival skips "newS < RI or newS in buffer or newS in window"; the initial window
    # holds the first *unique* DT+1 numbers.
    assert rfc5236_rd([1, 1, 2, 3, 2, 4, 4, 5], dt=3, counts=True) == {0: 5}
    assert rfc5236_rbd([1, 1, 2, 3, 2, 4, 4, 5], bt=3, counts=True) == {0: 5}


def test_rbd_occupancy_recorded_after_every_evaluated_arrival():
    # "B = number of occupied slots in buffer; FB[B]++" runs once per packet taken from the window,
    # after it was either buffered (early) or released the buffer (expected one arrived).
    # 1,3,4,5,2 with BT = 4: B after 1 -> 0, 3 -> 1, 4 -> 2, 5 -> 3, 2 -> 0 (frees 3,4,5).
    assert rfc5236_rbd([1, 3, 4, 5, 2], bt=4, counts=True) == {0: 2, 1: 1, 2: 1, 3: 1}
    # BT = 2: window of 3; 2 is not among the first three, so E = 3 ("The smallest element in window
    # is taken as E to neglect lost packets"): 1 -> 0, 3 -> 0, 4 -> 0, 5 -> 0; 2 <= E is skipped.
    assert rfc5236_rbd([1, 3, 4, 5, 2], bt=2, counts=True) == {0: 4}


def test_rd_stream_not_starting_at_one():
    # The pseudo-code starts with RI = 1 and, when RI is in neither window nor buffer, sets
    # RI = min(window, buffer): a stream numbered from 101 is evaluated exactly like one from 1.
    s = [1, 2, 4, 5, 3, 7, 6]
    shifted = [v + 100 for v in s]
    assert rfc5236_rd(shifted, counts=True) == rfc5236_rd(s, counts=True) == dict(_rd_reference(shifted, 3))
    assert rfc5236_rbd(shifted, counts=True) == rfc5236_rbd(s, counts=True)


# ------------------------------------------------------------ RFC 4737: implementation == definitions

def test_rfc4737_equals_literal_definitions():
    rng = random.Random(4737)
    for _ in range(500):
        s = _random_stream(rng, rng.randint(1, 60))
        n = rng.randint(1, 4)
        L, dups, reo, ext, nreo = _rfc4737_reference(s, n)
        r = rfc4737(s, n=n)
        key = "n3" if n == 3 else f"n{n}"
        assert (r["received"], r["duplicates"], r["reordered"], r["extents"]) == (L, dups, reo, ext), s
        assert r[f"{key}_reordered"] == nreo
        assert r["reordered_ratio"] == pytest.approx(reo / L if L else 0.0)
        assert r["reordered_pct"] == pytest.approx(100.0 * reo / L if L else 0.0)   # R = count / L * 100


def test_rfc4737_ratio_denominator_excludes_duplicates():
    # sec. 4.1: "L is the total number of packets received out of the K packets sent. Recall that
    # identical copies (duplicates) have been removed, so L <= K."
    r = rfc4737([1, 3, 3, 3, 2, 4])
    assert (r["received"], r["duplicates"], r["reordered"]) == (4, 2, 1)
    assert r["reordered_ratio"] == pytest.approx(1 / 4)


def test_rfc4737_duplicate_of_reordered_packet_is_not_counted_again():
    # only the first copy is analysed: the late second copy of 2 is not a second reordered packet
    r = rfc4737([1, 3, 2, 4, 2])
    assert (r["reordered"], r["extents"], r["duplicates"]) == (1, [1], 1)


def test_n_reordering_is_at_least_n():
    # 5,6,7,8,4: 4 has 4 larger predecessors -> it is 1-, 2-, 3- and 4-reordered, not 5-reordered
    s = [1, 2, 3, 5, 6, 7, 8, 4]
    assert [rfc4737(s, n=n)[("n3" if n == 3 else f"n{n}") + "_reordered"] for n in (1, 2, 3, 4, 5)] == [1, 1, 1, 1, 0]
    with pytest.raises(ValueError):
        rfc4737(s, n=0)


# ------------------------------------------------------------ TCP adaptation keeps the source numbering

MSS = 1000


def _rows(order, isn=7000):
    return pd.DataFrame(
        [(k * 1e-3, "10.0.0.1", "10.0.1.1", 6, 40000, 5201, (isn + i * MSS) % 2**32, MSS) for k, i in enumerate(order)],
        columns=["ts", "src", "dst", "proto", "sport", "dport", "seq", "payload_len"])


def test_tcp_lost_segment_leaves_a_gap_in_the_packet_numbering():
    # The sender sent segments 0..4 once each (packets 1..5); segment 3 (packet 4) was lost.
    # Arrival 0,2,4,1 as packets is 1,3,5,2 (losses "simply absent", as in the RFCs).  Renumbering
    # the received segments 1,2,3,4 instead would change RD: RFC 5236 on 1,3,5,2 (DT = 3) gives
    # D = 0, -1, -2 and, after RI skips the lost 4, 2 late by 3 (RI = 5).
    tx = _rows([0, 1, 2, 3, 4])
    rx = _rows([0, 2, 4, 1])
    r = tcp_reordering(rx, tx)
    assert r["basis"] == "sender-filtered"
    assert r["rd"] == pytest.approx({k: v / 4 for k, v in _rd_reference([1, 3, 5, 2], 3).items()})
    assert r["rd"] == pytest.approx({-2: 0.25, -1: 0.25, 0: 0.25, 3: 0.25})
    assert r["rbd"] == pytest.approx({k: v / 4 for k, v in _rbd_reference([1, 3, 5, 2], 3).items()})
    assert (r["received"], r["reordered"], r["extents"]) == (4, 1, [2])


def test_tcp_receiver_only_numbering_includes_excluded_retransmissions():
    # Segment 2 arrives twice (a retransmission): both copies are excluded, but it was still a
    # packet of the stream, so 3 keeps packet number 4.
    rx = _rows([0, 1, 3, 2, 4, 2])
    r = tcp_reordering(rx)
    assert r["basis"] == "receiver-only"
    # evaluated packets 1,2,4,5: no reordering; RD: RI 3 is missing -> jump, all D = 0
    assert (r["received"], r["reordered"]) == (4, 0)
    assert r["rd"] == {0: 1.0}
    assert np.isclose(sum(r["rbd"].values()), 1.0)
