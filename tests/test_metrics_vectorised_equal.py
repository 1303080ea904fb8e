"""The vectorised / compiled metric code gives IDENTICAL results to the frozen loops it replaced (issue 7).

Oracle: tests/reference_metrics_slow.py, verbatim copies of the implementations before vectorising.  "Identical"
means: same types (dict key order, Python int vs float), same numpy dtypes and shapes, same values, NaN in the same
places, DataFrames equal column by column with the same index (``_same`` below); no tolerance anywhere.

Inputs: (a) randomised synthetic streams and TCP connections with a fixed seed -- reordering, loss gaps,
duplicates, retransmissions (whole, partial, re-segmented, spanning several segments), zero-payload segments,
D-SACK blocks, wraparound of the 32-bit sequence space, empty and 1-packet inputs -- several hundred cases per
function; (b) the hand-built edge-case capture of tests/test_metrics_tcp.py, the small real captures in
tests/data/real/ and every capture of the data/sample bundle (read with ``analysis.ingest.read_pcap``).
The RFC 5236 loops are checked on every path: compiled (numba, when installed), the Python fallback, and the
compiled kernels' own source run as Python.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import reference_metrics_slow as ref  # noqa: E402
from pcapgen import write_pcap  # noqa: E402

from analysis.families import roundrobin  # noqa: E402
from analysis import flows as new_flows  # noqa: E402
from analysis.errors import NoTrafficError  # noqa: E402
from analysis.ingest import read_pcap  # noqa: E402
from analysis.ingest.schema import COLUMNS, MAX_SACK_BLOCKS  # noqa: E402
from analysis.metrics import reordering as new_reo  # noqa: E402
from analysis.metrics import retransmissions as new_rt  # noqa: E402
from analysis.metrics import rtt as new_rtt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HAVE_NUMBA = new_reo.have_numba()
SEED = 20261121


# ------------------------------------------------------------------------------------------------ comparison

def _same(a, b, where="value"):
    """Assert a and b are identical (types, dtypes, values, NaN positions, order of dict keys)."""
    if isinstance(a, pd.DataFrame):
        assert isinstance(b, pd.DataFrame), where
        assert list(a.columns) == list(b.columns), where
        assert list(a.dtypes) == list(b.dtypes), where
        assert a.index.equals(b.index) and type(a.index) is type(b.index), where
        pd.testing.assert_frame_equal(a, b, check_exact=True, obj=where)
        return
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), f"{where}: {type(b)}"
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), where
        return
    assert type(a) is type(b), f"{where}: {type(a)} vs {type(b)}"
    if isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} vs {list(b)}"
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert (math.isnan(a) and math.isnan(b)) or a == b, f"{where}: {a!r} vs {b!r}"
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def _outcome(fn, *args, **kw):
    """("ok", result) or ("raise", exception type, message): errors must match too."""
    try:
        return ("ok", fn(*args, **kw))
    except (ValueError, NoTrafficError, RuntimeError) as exc:
        return ("raise", type(exc).__name__, str(exc))


# ------------------------------------------------------------------------------------------------ (a) streams

def _stream(rng) -> np.ndarray:
    """A packet-number stream in arrival order: 1..n (or another origin) with local reordering, loss gaps,
    duplicates and occasional long displacements."""
    n = int(rng.choice([0, 1, 2, 3, 5, 10, 30, 100, 400, 3000]))
    s = np.arange(n, dtype=np.int64) + int(rng.choice([1, 1, 1, 0, -7, 10**9, 2**33]))
    if n > 1:
        for _ in range(int(rng.integers(0, n // 2 + 1))):     # local swaps (reordering, extent up to 6)
            i = int(rng.integers(0, n))
            j = min(n - 1, i + int(rng.integers(1, 7)))
            s[i], s[j] = s[j], s[i]
        if rng.random() < 0.3:                                 # a few long displacements
            for _ in range(int(rng.integers(1, 4))):
                i, j = sorted(rng.integers(0, n, 2).tolist())
                s = np.concatenate((s[:i], s[j:j + 1], s[i:j], s[j + 1:]))
        s = s[rng.random(n) >= rng.choice([0.0, 0.02, 0.1, 0.4])]   # loss gaps
        if s.size and rng.random() < 0.4:                      # duplicates (anywhere later in the stream)
            k = int(rng.integers(1, max(2, s.size // 10)))
            src = rng.integers(0, s.size, k)
            dst = np.sort(rng.integers(0, s.size + 1, k))
            s = np.insert(s, dst, s[np.sort(src)])
    return s


STREAMS = [_stream(np.random.default_rng([SEED, i])) for i in range(400)]
STREAMS += [np.zeros(0, np.int64), np.array([5]), np.array([1, 1]), np.array([3, 2, 1]),
            np.array([1, 10, 2, 3, 4, 5]), np.array([2, 1, 2, 1]), np.array([-3, -1, -2, 0])]


def _paths():
    out = [False]
    if HAVE_NUMBA:
        out += [True]
    return out


@pytest.mark.parametrize("accel", _paths(), ids=lambda a: "compiled" if a else "python")
def test_rfc5236_rd_rbd_equal_on_streams(accel, monkeypatch):
    monkeypatch.setattr(new_reo, "NUMBA_MIN_PACKETS", 0 if accel else 10**12)
    for k, s in enumerate(STREAMS):
        for t in (0, 1, 3, 7):
            for counts in (False, True):
                _same(_outcome(ref.rfc5236_rd, s, t, counts=counts), _outcome(new_reo.rfc5236_rd, s, t, counts=counts),
                      f"RD stream {k} DT={t} counts={counts}")
                _same(_outcome(ref.rfc5236_rbd, s, t, counts=counts),
                      _outcome(new_reo.rfc5236_rbd, s, t, counts=counts), f"RBD stream {k} BT={t} counts={counts}")
    for s in STREAMS[-7:]:   # huge thresholds: clamped in the compiled path, unchanged results
        _same(ref.rfc5236_rd(s, 10**20), new_reo.rfc5236_rd(s, 10**20), "RD huge DT")
        _same(ref.rfc5236_rbd(s, 10**20), new_reo.rfc5236_rbd(s, 10**20), "RBD huge BT")


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba not installed: no compiled kernels")
def test_rfc5236_kernel_source_as_python_equal():
    """The kernels' Python source (what numba compiles) gives the reference frequencies too."""
    from analysis.metrics import rfc5236_kernel as kern
    for k, s in enumerate(STREAMS[:150] + STREAMS[-7:]):
        s = s.astype(np.int64)
        for t in (0, 2, 3):
            if s.size:
                dout = np.empty(s.size, np.int64)
                m = kern.rd_kernel.py_func(s, t, dout, int(s.max()))
                d, c = np.unique(dout[:m], return_counts=True)
                got = {int(a): int(b) for a, b in zip(d, c)}
                u, r = np.unique(s, return_inverse=True)
                hist = np.zeros(s.size + 1, np.int64)
                kern.rbd_kernel.py_func(r.ravel().astype(np.int64), int(u.size), t, hist)
                got_b = {int(i): int(hist[i]) for i in np.flatnonzero(hist)}
            else:
                got, got_b = {}, {}
            assert got == ref.rfc5236_rd(s, t, counts=True), f"stream {k} DT={t}"
            assert got_b == ref.rfc5236_rbd(s, t, counts=True), f"stream {k} BT={t}"


def test_rfc4737_equal_on_streams():
    for k, s in enumerate(STREAMS):
        for n in (1, 3, 5):
            _same(_outcome(ref.rfc4737, s, n=n), _outcome(new_reo.rfc4737, s, n=n), f"stream {k} n={n}")


def test_bad_inputs_raise_the_same():
    for fn in ("rfc5236_rd", "rfc5236_rbd", "rfc4737"):
        for args in (([1.5, 2],), ([1, 2], -1), ([np.nan],), ([1, 2], 1.5)):
            _same(_outcome(getattr(ref, fn), *args), _outcome(getattr(new_reo, fn), *args), f"{fn}{args}")


# ------------------------------------------------------------------------------------------------ (a) TCP tables

def _table(rows: list[dict]) -> pd.DataFrame:
    """A per-packet table with the ingest schema's columns and dtypes."""
    cols = {}
    for c, dt in COLUMNS.items():
        default = {"src": "", "dst": "", "ts": 0.0, "sack_permitted": False}.get(c, -1)
        cols[c] = np.array([r.get(c, default) for r in rows], dtype=dt) if rows else np.zeros(0, dtype=dt)
    cols["sack_blocks"] = np.array([r.get("sack_blocks", 0) for r in rows], dtype=np.int8)
    cols["flags"] = np.array([r.get("flags", 0) for r in rows], dtype=np.int16)
    return pd.DataFrame(cols)


def _connection(rng, n_data: int):
    """Random TCP connection A -> B (data) with ACKs B -> A, one UDP flow and a small other TCP connection, as seen
    at a sender-side capture point, plus the receiver-side view of the data packets (loss, reordering, duplicates).
    Returns (sender table, receiver table)."""
    A, B = "10.0.0.1", "10.0.0.2"
    base = int(rng.choice([0, int(rng.integers(0, 2**32)), 2**32 - int(rng.integers(1, 40000))]))
    mss = int(rng.choice([100, 536, 1448]))
    t = 0.0
    front = 0
    data = []
    for _ in range(n_data):
        t += float(rng.exponential(0.001))
        r = rng.random()
        if r < 0.12 and front > 0:               # retransmission: whole, partial, re-segmented or spanning
            a = int(rng.integers(0, front))
            if rng.random() < 0.6:
                a -= a % mss
            ln = int(rng.choice([mss, mss // 2, 2 * mss, int(rng.integers(1, 4 * mss))]))
        elif r < 0.15:                           # zero-payload segment of the data direction
            a, ln = front, 0
        elif r < 0.17 and front > 0:             # overlapping the front (partly new data)
            a = max(0, front - int(rng.integers(1, mss)))
            ln = mss
        else:
            a, ln = front, mss
        front = max(front, a + ln)
        tsval = int(rng.integers(0, 2**32)) if rng.random() < 0.05 else 1000 + int(t * 1000)
        data.append({"ts": t, "src": A, "dst": B, "sport": 40000, "dport": 5201, "proto": 6,
                     "seq": (base + a) % 2**32, "ack": 1, "flags": 0x10, "payload_len": ln,
                     "tsval": tsval, "tsecr": 7})
    acks = []
    cum = 0
    for d in data:
        if rng.random() < 0.7:
            hi = (d["seq"] - base) % 2**32 + d["payload_len"]
            cum = max(cum, int(rng.integers(min(max(0, cum - mss), hi), hi + 1)))
            cum_out = cum if rng.random() > 0.03 else max(0, cum - 3 * mss)      # an old ACK now and then
            nb = int(rng.choice([0, 0, 1, 2, 3, 4]))
            blocks = []
            for _ in range(nb):
                lo = cum_out + int(rng.integers(-3 * mss, 6 * mss))
                blocks.append((lo, lo + int(rng.integers(1, 3 * mss))))
            if nb >= 2 and rng.random() < 0.3:   # D-SACK inside the second block
                blocks[0] = (blocks[1][0], blocks[1][0] + 1)
            row = {"ts": d["ts"] + float(rng.uniform(0.0001, 0.02)), "src": B, "dst": A, "sport": 5201,
                   "dport": 40000, "proto": 6, "seq": 1, "ack": (base + cum_out) % 2**32,
                   "flags": 0x10 if rng.random() > 0.02 else 0x02, "payload_len": 0,
                   "tsval": 7, "tsecr": d["tsval"] if rng.random() < 0.9 else 0, "sack_blocks": nb}
            for i, (lo, hi) in enumerate(blocks, start=1):
                row[f"sack{i}_left"], row[f"sack{i}_right"] = (base + lo) % 2**32, (base + hi) % 2**32
            acks.append(row)
    other = [{"ts": float(rng.uniform(0, max(t, 0.01))), "src": "10.0.0.3", "dst": B, "sport": 9, "dport": 5001,
              "proto": 17, "payload_len": int(rng.integers(0, 1400))} for _ in range(int(rng.integers(0, 20)))]
    other += [{"ts": float(rng.uniform(0, max(t, 0.01))), "src": A, "dst": B, "sport": 40001, "dport": 5201,
               "proto": 6, "seq": int(rng.integers(0, 2**32)), "ack": 5, "flags": 0x18,
               "payload_len": int(rng.integers(0, 40))} for _ in range(int(rng.integers(0, 6)))]
    snd = data + acks + other
    for i, r in enumerate(sorted(snd, key=lambda r: r["ts"]), start=1):
        r["pkt_no"] = i
    rx = [dict(d) for d in data if rng.random() >= rng.choice([0.0, 0.05, 0.3])]     # loss before the receiver
    for d in rx:
        d["ts"] += 0.01 + float(rng.exponential(0.002)) * (5 if rng.random() < 0.2 else 1)   # reordering
    rx += [dict(d, ts=d["ts"] + 0.003) for d in rx if rng.random() < 0.02]                # duplicates
    for i, r in enumerate(sorted(rx, key=lambda r: r["ts"]), start=1):
        r["pkt_no"] = i
    return _table(snd), _table(rx)


def _same_flows(df, where):
    a, b = ref.split_flows(df), new_flows.split_flows(df)
    assert len(a) == len(b), where
    for i, (x, y) in enumerate(zip(a, b)):
        for attr in ("proto", "src", "sport", "dst", "dport"):
            _same(getattr(x, attr), getattr(y, attr), f"{where} flow {i} {attr}")
        _same(x.data, y.data, f"{where} flow {i} data")
        _same(x.ack, y.ack, f"{where} flow {i} ack")
    return a


def _same_tcp_metrics(f, where):
    if f.proto != 6:
        return
    d, a = f.data, f.ack
    _same(ref.retransmission_mask(d), new_rt.retransmission_mask(d), f"{where} retransmission_mask")
    _same(ref.retransmissions(d), new_rt.retransmissions(d), f"{where} retransmissions")
    _same(ref.spurious_mask(d, a), new_rt.spurious_mask(d, a), f"{where} spurious_mask")
    _same(ref.ack_rtt_ms(d, a), new_rtt.ack_rtt_ms(d, a), f"{where} ack_rtt_ms")
    _same(ref.ts_rtt_ms(d, a), new_rtt.ts_rtt_ms(d, a), f"{where} ts_rtt_ms")


CONN_SIZES = [0, 1, 2, 3, 5, 8, 20, 60, 200, 1000]


@pytest.mark.parametrize("block", range(4))
def test_tcp_metrics_equal_on_random_connections(block, monkeypatch):
    """400 random connections (100 per block): flows, retransmissions, spurious retransmissions, RTT samples.
    retransmission_mask: numpy path in even blocks, compiled loop (when numba is installed) in odd ones."""
    compiled = HAVE_NUMBA and new_rt.have_numba() and block % 2 == 1
    monkeypatch.setattr(new_rt, "NUMBA_MIN_SEGMENTS", 0 if compiled else 10**12)
    for i in range(block * 100, block * 100 + 100):
        rng = np.random.default_rng([SEED, 1000 + i])
        snd, rx = _connection(rng, int(rng.choice(CONN_SIZES)))
        for f in _same_flows(snd, f"conn {i}"):
            _same_tcp_metrics(f, f"conn {i}")
        _same_flows(rx, f"conn {i} receiver")


@pytest.mark.parametrize("block", range(3))
def test_tcp_reordering_equal_on_random_connections(block, monkeypatch):
    """300 random connections: tcp_reordering sender-filtered and receiver-only (with the compiled RFC 5236 loops
    for every stream length when numba is installed)."""
    if HAVE_NUMBA:
        monkeypatch.setattr(new_reo, "NUMBA_MIN_PACKETS", 0)
    for i in range(block * 100, block * 100 + 100):
        rng = np.random.default_rng([SEED, 5000 + i])
        snd, rx = _connection(rng, int(rng.choice(CONN_SIZES)))
        _same(_outcome(ref.tcp_reordering, rx, sender_df=snd), _outcome(new_reo.tcp_reordering, rx, sender_df=snd),
              f"conn {i} sender-filtered")
        _same(_outcome(ref.tcp_reordering, rx), _outcome(new_reo.tcp_reordering, rx), f"conn {i} receiver-only")


@pytest.mark.parametrize("compiled", [False, True], ids=["numpy", "compiled"])
def test_retransmission_mask_edge_inputs(compiled, monkeypatch):
    """Ranges touching, nested, identical, wrapped; degenerate rows (end <= start with payload) and float columns
    take the loop, with the same result."""
    if compiled and not new_rt.have_numba():
        pytest.skip("numba not installed: no compiled loop")
    monkeypatch.setattr(new_rt, "NUMBA_MIN_SEGMENTS", 0 if compiled else 10**12)
    cases = [
        ([], [], []),
        ([0], [10], [10]),
        ([0, 10, 0], [10, 20, 20], [10, 10, 20]),            # touching ranges union, then covered
        ([0, 5, 2, 0], [10, 15, 8, 15], [10, 10, 6, 15]),
        ([5, 0, 0, 5], [10, 5, 10, 10], [5, 5, 10, 5]),
        ([0, 0, 3], [10, 10, 3], [10, 0, 0]),                # zero payload rows are never retransmissions
        ([0, 4, 4, 4], [10, 4, 2, 6], [10, 3, 3, 2]),        # degenerate: end <= start with payload
        ([2**40, 2**40 - 100], [2**40 + 50, 2**40], [50, 100]),
    ]
    for s, e, p in cases:
        for dt in (np.int64, np.int32, np.float64):
            d = pd.DataFrame({"seq_un": np.array(s, dtype=np.int64).astype(dt),
                              "end_un": np.array(e, dtype=np.int64).astype(dt),
                              "payload_len": np.array(p, dtype=np.int32)})
            _same(ref.retransmission_mask(d), new_rt.retransmission_mask(d), f"{s} {e} {p} {dt}")
    rng = np.random.default_rng(SEED)
    for i in range(300):   # dense random ranges: heavy overlap, many pieces
        n = int(rng.integers(1, 80))
        s = rng.integers(0, 60, n)
        e = s + rng.integers(-2 if i % 5 == 0 else 1, 25, n)
        p = np.where(rng.random(n) < 0.1, 0, e - s)
        d = pd.DataFrame({"seq_un": s.astype(np.int64), "end_un": e.astype(np.int64), "payload_len": p.astype(np.int32)})
        _same(ref.retransmission_mask(d), new_rt.retransmission_mask(d), f"random ranges {i}")
    if compiled:   # the kernel on degenerate rows too (the package routes those to the Python loop)
        from analysis.metrics.interval_union_kernel import retransmission_kernel
        for i in range(300):
            n = int(rng.integers(1, 60))
            s = rng.integers(0, 50, n).astype(np.int64)
            e = (s + rng.integers(-5, 20, n)).astype(np.int64)
            p = rng.integers(-1, 3, n).astype(np.int32)
            out = np.zeros(n, dtype=bool)
            retransmission_kernel(s, e, p > 0, out)
            d = pd.DataFrame({"seq_un": s, "end_un": e, "payload_len": p})
            _same(ref.retransmission_mask(d), out, f"kernel, degenerate ranges {i}")


def test_edge_tables_equal():
    """Unsorted timestamps, ties, missing key values, no data, no matching sender flow, missing columns."""
    rng = np.random.default_rng([SEED, 77])
    snd, rx = _connection(rng, 300)
    variants = {"shuffled": snd.sample(frac=1.0, random_state=1), "reversed": snd.iloc[::-1],
                "ts ties": snd.assign(ts=np.round(snd["ts"].to_numpy(), 2)),
                "filtered index": snd[snd["payload_len"].to_numpy() % 3 != 1],
                "no data": snd[snd["payload_len"] == 0], "udp only": snd[snd["proto"] == 17]}
    obj_src = snd.copy()
    obj_src["src"] = obj_src["src"].astype(object)
    obj_src.loc[obj_src.index[::7], "src"] = None
    variants["None in src"] = obj_src
    for name, df in variants.items():
        if len(df):
            for f in _same_flows(df, name):
                _same_tcp_metrics(f, name)
        for rxv, sv in ((rx, df), (df, snd), (df, None)):
            _same(_outcome(ref.tcp_reordering, rxv, sender_df=sv), _outcome(new_reo.tcp_reordering, rxv, sender_df=sv),
                  f"{name} reordering")
    all_none = rx.copy()
    all_none["src"] = None
    other = rx.assign(sport=rx["sport"] + 1)
    for rxv, sv in ((all_none, snd), (rx, all_none), (rx, other), (rx.drop(columns=["ts"]), snd),
                    (rx, snd.drop(columns=["proto"])), (rx.iloc[:1], snd), (rx, snd.iloc[:1])):
        _same(_outcome(ref.tcp_reordering, rxv, sender_df=sv), _outcome(new_reo.tcp_reordering, rxv, sender_df=sv),
              "edge reordering")


# ------------------------------------------------------------------------------------------------ (b) captures

def test_hand_built_capture_equal(tmp_path):
    """tests/test_metrics_tcp.py's connection (wraps at offset 250, loss, retransmission, spurious one, D-SACKs)."""
    from test_metrics_tcp import PKTS
    df = read_pcap(write_pcap(tmp_path / "c.pcap", PKTS, snaplen=128), cache=False)
    for f in _same_flows(df, "hand-built"):
        _same_tcp_metrics(f, "hand-built")
    _same(_outcome(ref.tcp_reordering, df), _outcome(new_reo.tcp_reordering, df), "hand-built reordering")


REAL = sorted((ROOT / "tests" / "data" / "real").glob("*.pcap"))


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_small_captures_equal(path):
    df = read_pcap(path, cache=False)
    for f in _same_flows(df, path.name):
        _same_tcp_metrics(f, path.name)
    _same(_outcome(ref.tcp_reordering, df), _outcome(new_reo.tcp_reordering, df), f"{path.name} reordering")


# the runs of data/sample that ship their captures: captures/<run_id>/ of the columnar bundle (runs/<run_id>/ of a
# run-directory one)
SAMPLE_RUNS = sorted(p.parent for sub in ("captures", "runs")
                     for p in (ROOT / "data" / "sample" / sub).glob("*/router1.pcap*"))


def test_the_sample_bundle_ships_captures():
    assert len(SAMPLE_RUNS) >= 10, SAMPLE_RUNS


def _conn(df, f):
    fwd = (df["src"] == f.src) & (df["dst"] == f.dst) & (df["sport"] == f.sport) & (df["dport"] == f.dport)
    rev = (df["src"] == f.dst) & (df["dst"] == f.src) & (df["sport"] == f.dport) & (df["dport"] == f.sport)
    return df[(fwd | rev) & (df["proto"] == f.proto)]


@pytest.mark.parametrize("run", SAMPLE_RUNS, ids=lambda p: p.name)
def test_sample_bundle_captures_equal(run):
    """Every capture pair of the data/sample bundle: flows and metrics at router1, reordering at the receiver."""
    for r1name, rxname in (("router1", "receiver"), ("router1-flow2", "receiver-flow2")):
        r1p = next(iter(run.glob(f"{r1name}.pcap*")), None)
        rxp = next(iter(run.glob(f"{rxname}.pcap*")), None)
        if r1p is None:
            continue
        r1 = read_pcap(r1p, cache=False)
        fl = _same_flows(r1, f"{run.name}/{r1p.name}")
        for f in fl:
            _same_tcp_metrics(f, f"{run.name}/{r1p.name}")
        if rxp is None:
            continue
        rx = read_pcap(rxp, cache=False)
        _same_flows(rx, f"{run.name}/{rxp.name}")
        tcp = [f for f in fl if f.proto == 6]
        if tcp:
            big = max(tcp, key=lambda f: int(f.data["payload_len"].sum()))
            a, b = _conn(rx, big), _conn(r1, big)
            _same(_outcome(ref.tcp_reordering, a, sender_df=b), _outcome(new_reo.tcp_reordering, a, sender_df=b),
                  f"{run.name} {rxname} sender-filtered")
            # analysis.families.roundrobin hands tcp_reordering the sender's rows from the split Flow instead of a second scan
            _same(_outcome(new_reo.tcp_reordering, a, sender_df=b),
                  _outcome(new_reo.tcp_reordering, a, sender_df=roundrobin._split_conn_rows(big)),
                  f"{run.name} {rxname} sender rows from the Flow")
            _same(_outcome(ref.tcp_reordering, a), _outcome(new_reo.tcp_reordering, a),
                  f"{run.name} {rxname} receiver-only")


def test_sack_columns_cover_schema():
    """The synthetic tables carry every SACK column the unwrapping reads (guards the generator above)."""
    for i in range(1, MAX_SACK_BLOCKS + 1):
        assert f"sack{i}_left" in COLUMNS and f"sack{i}_right" in COLUMNS
