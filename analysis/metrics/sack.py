"""SACK counters of an ACK direction (RFC 2018, RFC 2883).

* ``sack_acks``: ACK-direction segments carrying at least one SACK block (tshark ``tcp.options.sack.count > 0``), packets.
* ``sack_blocks``: sum of SACK blocks over those segments (sum of tshark ``tcp.options.sack.count``), blocks.
* ``dsack_blocks``: D-SACK blocks per RFC 2883 sec. 4: the first SACK block is a D-SACK block when it covers
  sequence space at or below the cumulative acknowledgement (its right edge <= ACK), or when it is contained in the
  second SACK block (left2 <= left1 and right1 <= right2). At most one per ACK.
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def sack_acks(ack: pd.DataFrame) -> int:
    """Number of ACK segments with >= 1 SACK block, packets."""
    return int((ack["sack_blocks"].to_numpy() > 0).sum())


def sack_blocks(ack: pd.DataFrame) -> int:
    """Total SACK blocks (tshark sum of tcp.options.sack.count), blocks."""
    return int(ack["sack_blocks"].to_numpy().astype(np.int64).sum())


def dsack_mask(ack: pd.DataFrame) -> np.ndarray:
    """Boolean per ACK segment: its first SACK block is a D-SACK block (RFC 2883 sec. 4).
    Needs the unwrapped columns of ``analysis.flows`` (``ack_un``, ``sack1_left_un`` ...)."""
    if len(ack) == 0:
        return np.zeros(0, dtype=bool)
    n = ack["sack_blocks"].to_numpy()
    a = ack["ack_un"].to_numpy()
    l1, r1 = ack["sack1_left_un"].to_numpy(), ack["sack1_right_un"].to_numpy()
    l2, r2 = ack["sack2_left_un"].to_numpy(), ack["sack2_right_un"].to_numpy()
    has_ack = (ack["flags"].to_numpy() & 0x10) != 0
    below = (n >= 1) & has_ack & (r1 <= a)
    inside = (n >= 2) & (l2 <= l1) & (r1 <= r2)
    return below | inside


def dsack_blocks(ack: pd.DataFrame) -> int:
    """Number of D-SACK blocks (RFC 2883 sec. 4), blocks."""
    return int(dsack_mask(ack).sum())
