"""ETSI TIPHON quality categories of delay, jitter, packet loss and throughput, as study 003 classifies its results.

Study 003 (section II and IV.C) classifies its measurements "based on the TIPHON standard [10], [11]" (ETSI TR 101 329-1
V3.1.2 and TS 101 329-5 V1.1.2, 2002) into four categories, Sangat Bagus / Bagus / Sedang / Buruk (very good, good,
medium, poor; index 4..1), and says that a jitter close to 0 ms is "Sangat Bagus". The paper does not print the
thresholds. This module uses the table that the Indonesian QoS literature cites as TIPHON's (delay in ms, jitter in ms,
packet loss in %, throughput in % of the link capacity):

| category (index)  | delay       | jitter        | packet loss | throughput |
|-------------------|-------------|---------------|-------------|------------|
| Sangat Bagus (4)  | < 150       | 0             | 0 - 3       | > 75       |
| Bagus (3)         | 150 - 300   | 0 - 75        | 3 - 15      | 50 - 75    |
| Sedang (2)        | 300 - 450   | 75 - 125      | 15 - 25     | 25 - 50    |
| Buruk (1)         | > 450       | 125 - 225     | > 25        | < 25       |

Boundaries: a value on a boundary goes to the better category (a delay of 150.0 ms is "Sangat Bagus", 150.1 ms
"Bagus"; a loss of exactly 3 % is "Sangat Bagus"). The throughput column is printed in the literature as the points
100 / 75 / 50 / < 25 %; read here as the ranges above. Jitter is "Sangat Bagus" only at exactly
0 ms (the table's single value; the paper's "close to 0 ms" is not a threshold): any positive jitter up to 75 ms is
"Bagus". Jitter above 225 ms stays "Buruk". Variants of this table exist in the literature (some read the loss column
as 0 / 3 / 15 / 25 % points); the thresholds are data below so a notebook can show which table was used.
"""
from __future__ import annotations

import math

CATEGORIES = {4: "Sangat Bagus", 3: "Bagus", 2: "Sedang", 1: "Buruk"}
ENGLISH = {4: "very good", 3: "good", 2: "medium", 1: "poor"}

# upper bounds (inclusive) of categories 4, 3, 2 for "lower is better" metrics; above the last: category 1
DELAY_MS = (150.0, 300.0, 450.0)
JITTER_MS = (0.0, 75.0, 125.0)
LOSS_PCT = (3.0, 15.0, 25.0)
# lower bounds (exclusive for 4, inclusive below) for throughput as % of capacity ("higher is better")
THROUGHPUT_PCT = (75.0, 50.0, 25.0)


def _lower_is_better(value: float, bounds) -> int:
    if value is None or not math.isfinite(value) or value < 0:
        raise ValueError(f"need a finite non-negative value, got {value!r}")
    for index, bound in zip((4, 3, 2), bounds):
        if value <= bound:
            return index
    return 1


def delay_index(delay_ms: float) -> int:
    """TIPHON index (4..1) of a one-way or average delay in ms."""
    return _lower_is_better(delay_ms, DELAY_MS)


def jitter_index(jitter_ms: float) -> int:
    """TIPHON index (4..1) of a jitter in ms (paper 003's mean |D_i - D_i+1|)."""
    return _lower_is_better(jitter_ms, JITTER_MS)


def loss_index(loss_pct: float) -> int:
    """TIPHON index (4..1) of a packet loss in %."""
    return _lower_is_better(loss_pct, LOSS_PCT)


def throughput_index(throughput_pct: float) -> int:
    """TIPHON index (4..1) of a throughput in % of the link capacity (> 75 % is 4)."""
    if throughput_pct is None or not math.isfinite(throughput_pct) or throughput_pct < 0:
        raise ValueError(f"need a finite non-negative value, got {throughput_pct!r}")
    if throughput_pct > THROUGHPUT_PCT[0]:
        return 4
    for index, bound in zip((3, 2), THROUGHPUT_PCT[1:]):
        if throughput_pct >= bound:
            return index
    return 1


def category(index: int) -> str:
    """The Indonesian category name of an index (4 -> "Sangat Bagus")."""
    return CATEGORIES[int(index)]
