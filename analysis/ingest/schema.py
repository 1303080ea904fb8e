"""Column schema of the per-packet table produced by every ingest path.

Both decoders (the dpkt reference path and the vectorised fast path) must produce exactly these
columns, in this order, with these dtypes, and equal values packet for packet.

One row per IPv4/IPv6 packet that carries TCP or UDP (other packets are skipped, but ``pkt_no``
keeps counting every record in the file, so it equals tshark's ``frame.number``).

Units: ``ts`` seconds (float64, epoch); lengths in bytes; sequence numbers raw 32-bit (not unwrapped).
Absent values: -1 for integer fields (e.g. ``tsval`` when there is no timestamp option).
"""
import numpy as np

MAX_SACK_BLOCKS = 4  # a TCP option space of 40 bytes holds at most 4 SACK blocks (RFC 2018)

COLUMNS = {
    "pkt_no": np.int64,        # 1-based record number in the file (tshark frame.number)
    "ts": np.float64,          # capture timestamp, s
    "cap_len": np.int32,       # captured bytes of the record (after snaplen)
    "ip_version": np.int8,     # 4 or 6
    "src": object,             # source address, text (e.g. "10.1.1.2", "fd00::1")
    "dst": object,             # destination address, text
    "proto": np.int8,          # 6 = TCP, 17 = UDP
    "ip_id": np.int32,         # IPv4 identification; -1 for IPv6
    "ip_len": np.int32,        # IP total length, bytes (IPv6: payload length + 40)
    "sport": np.int32,
    "dport": np.int32,
    "payload_len": np.int32,   # transport payload bytes from the headers' lengths (not cap_len)
    "seq": np.int64,           # TCP raw sequence number (0..2**32-1); -1 for UDP
    "ack": np.int64,           # TCP raw acknowledgment number; -1 for UDP
    "flags": np.int16,         # TCP flags byte incl. ECE/CWR (FIN=0x01 SYN=0x02 RST=0x04 PSH=0x08 ACK=0x10); 0 for UDP
    "win": np.int32,           # TCP raw window field (unscaled); -1 for UDP
    "tcp_hlen": np.int16,      # TCP header length incl. options, bytes; -1 for UDP
    "mss": np.int32,           # MSS option value, -1 if absent
    "wscale": np.int8,         # window-scale option shift, -1 if absent
    "sack_permitted": np.bool_,
    "tsval": np.int64,         # timestamp option TSval, -1 if absent
    "tsecr": np.int64,         # timestamp option TSecr, -1 if absent
    "sack_blocks": np.int8,    # number of SACK blocks (tshark tcp.options.sack.count), 0 if none
}
for _i in range(1, MAX_SACK_BLOCKS + 1):
    COLUMNS[f"sack{_i}_left"] = np.int64    # left edge of block i (raw 32-bit), -1 if absent
    COLUMNS[f"sack{_i}_right"] = np.int64   # right edge of block i (raw 32-bit), -1 if absent

COLUMN_NAMES = list(COLUMNS)

TCP = 6
UDP = 17
FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80
