"""One-pass compiled decoder of a classic pcap buffer (numba accelerator of ``fast_reader``).

Plain Python source compiled with ``numba.njit`` at import (import this module only when numba is installed;
``fast_reader`` falls back to its numpy path otherwise).  Per record it does what ``dpkt_reader`` does -- same link-layer rules, same IPv4/IPv6
checks, same TCP option rules (RFC 9293 sec. 3.1: kind 0 ends the list, kind 1 is a one-byte NOP, any other
option is kind/length/data; a length < 2 or an option running past the captured header stops parsing) -- and
writes only the kept rows, compacted, into preallocated schema-typed columns.

Both loops issue software prefetches (``llvm.prefetch``, :func:`prefetch`): the record walk for the record about
eight records ahead (assuming records of the length just seen), the decoder for the two cache lines of the record
eight ahead. In a capture of whole frames the records are ~1.5 KB apart and every header misses the caches; without
the prefetches the walk and the decode of a 244,000-packet, 255-MB capture took 29 and 43 ms, with them 12.5 and
19 ms (bench/README.md). A prefetch never changes a value; if a kernel failed to compile, ``fast_reader`` falls
back to its numpy path.
"""
import numba
import numpy as np


from llvmlite import binding as _llvm
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

#: llvm.prefetch's name for this LLVM: opaque pointers ("p0") since LLVM 15, typed ones ("p0i8") before
_PREFETCH_NAME = "llvm.prefetch.p0" if _llvm.llvm_version_info >= (15,) else "llvm.prefetch.p0i8"


@intrinsic
def prefetch(typingctx, arr, idx):
    """``prefetch(arr, i)``: hint the CPU to load the cache line of ``arr[i]`` (llvm.prefetch: read, high
    locality, data cache). Lowered when a kernel that calls it is first compiled, nothing at import."""
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                            _PREFETCH_NAME)
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return sig, codegen


PREFETCH_AHEAD = 8   # records


def walk_kernel(buf, size, big_endian, out):
    """Offsets of the record headers of a classic pcap buffer (first record at byte 24) into ``out``; returns (n,
    status, bad record number, its incl_len, bytes present) with status as ``fast_reader.WALK_*`` (0 complete, 1 a
    truncated record header, 2 a corrupt record length, 3 a truncated last record)."""
    n = 0
    off = 24
    step = np.int64(0)
    while off < size:
        if size - off < 16:
            return n, 1, n + 1, 0, 0
        ahead = off + PREFETCH_AHEAD * step
        if ahead < size:
            prefetch(buf, ahead)
        if big_endian:
            incl = ((np.int64(buf[off + 8]) << 24) | (np.int64(buf[off + 9]) << 16)
                    | (np.int64(buf[off + 10]) << 8) | np.int64(buf[off + 11]))
        else:
            incl = ((np.int64(buf[off + 11]) << 24) | (np.int64(buf[off + 10]) << 16)
                    | (np.int64(buf[off + 9]) << 8) | np.int64(buf[off + 8]))
        if incl > 0x4000000:
            return n, 2, n + 1, incl, 0
        if off + 16 + incl > size:
            return n, 3, n + 1, incl, size - off - 16
        out[n] = off
        n += 1
        step = 16 + incl
        off += step
    return n, 0, 0, 0, 0

def _be16(b, i):
    return (np.int64(b[i]) << 8) | np.int64(b[i + 1])


def _be32(b, i):
    return (np.int64(b[i]) << 24) | (np.int64(b[i + 1]) << 16) | (np.int64(b[i + 2]) << 8) | np.int64(b[i + 3])


def _le32(b, i):
    return (np.int64(b[i + 3]) << 24) | (np.int64(b[i + 2]) << 16) | (np.int64(b[i + 1]) << 8) | np.int64(b[i])


def decode_kernel(buf, offs, unit, big, linktype,
                  pkt_no, ts, cap_len, ipver, proto_o, ip_id_o, ip_len_o, sport_o, dport_o, pay_o,
                  seq_o, ack_o, flags_o, win_o, hlen_o, mss_o, wsc_o, sackp_o, tsval_o, tsecr_o, nblk_o,
                  sack_o, addr_o):
    """Decode the records whose headers start at ``offs`` (from the record walk); returns the rows written.

    ``sack_o`` is (n, 8): left/right edges of blocks 1..4; ``addr_o`` is (n, 2): IPv4 source/destination as
    integers, or for IPv6 the absolute buffer offsets of the 16-byte addresses."""
    j = 0
    nr = offs.shape[0]
    for r in range(nr):
        off = offs[r]
        if r + PREFETCH_AHEAD < nr:
            ahead = offs[r + PREFETCH_AHEAD]
            prefetch(buf, ahead)
            if ahead + 64 < buf.shape[0]:
                prefetch(buf, ahead + 64)
        if big:
            sec = _be32(buf, off)
            frac = _be32(buf, off + 4)
            incl = _be32(buf, off + 8)
        else:
            sec = _le32(buf, off)
            frac = _le32(buf, off + 4)
            incl = _le32(buf, off + 8)
        n = r + 1
        d = off + 16
        L = incl
        # ---- link layer
        etype = -1
        o = 0
        if linktype == 1:
            if L < 14:
                continue
            etype = _be16(buf, d + 12)
            o = 14
            while (etype == 0x8100 or etype == 0x88A8 or etype == 0x9100) and L >= o + 4:
                etype = _be16(buf, d + o + 2)
                o += 4
        elif linktype == 113:
            if L < 16:
                continue
            etype = _be16(buf, d + 14)
            o = 16
        elif linktype == 276:
            if L < 20:
                continue
            etype = _be16(buf, d)
            o = 20
        elif linktype == 0:
            if L < 4:
                continue
            fam = _le32(buf, d)
            if fam > 0xFFFF:
                fam = _be32(buf, d)
            if fam == 2:
                etype = 0x0800
            elif fam == 10 or fam == 24 or fam == 28 or fam == 30:
                etype = 0x86DD
            o = 4
        else:
            if L < 1:
                continue
            v = buf[d] >> 4
            if v == 4:
                etype = 0x0800
            elif v == 6:
                etype = 0x86DD
            o = 0
        if etype != 0x0800 and etype != 0x86DD:
            continue
        if L < o + 1:
            continue
        # ---- IP
        b = d + o
        ver = buf[b] >> 4
        if ver == 4:
            if L < o + 20:
                continue
            ihl = np.int64(buf[b] & 0x0F) * 4
            iplen = _be16(buf, b + 2)
            ipid = _be16(buf, b + 4)
            if _be16(buf, b + 6) & 0x1FFF:
                continue
            proto = np.int64(buf[b + 9])
            a1 = _be32(buf, b + 12)
            a2 = _be32(buf, b + 16)
            l4 = o + ihl
            l4tot = iplen - ihl
        elif ver == 6:
            if L < o + 40:
                continue
            plen = _be16(buf, b + 4)
            proto = np.int64(buf[b + 6])
            ipid = -1
            iplen = plen + 40
            a1 = np.int64(b + 8)
            a2 = np.int64(b + 24)
            l4 = o + 40
            bad = False
            while proto == 0 or proto == 43 or proto == 60 or proto == 51 or proto == 44:
                if L < l4 + 8:
                    bad = True
                    break
                h = d + l4
                nxt = np.int64(buf[h])
                if proto == 44:
                    if _be16(buf, h + 2) & 0xFFF8:
                        bad = True
                        break
                    hl = 8
                elif proto == 51:
                    hl = (np.int64(buf[h + 1]) + 2) * 4
                else:
                    hl = (np.int64(buf[h + 1]) + 1) * 8
                proto = nxt
                l4 += hl
            if bad:
                continue
            l4tot = plen - (l4 - o - 40)
        else:
            continue
        # ---- transport
        t = d + l4
        mss = -1
        wsc = -1
        sackp = False
        tsval = -1
        tsecr = -1
        nblk = 0
        for k in range(8):
            sack_o[j, k] = -1
        if proto == 6:
            if L < l4 + 20:
                continue
            sport = _be16(buf, t)
            dport = _be16(buf, t + 2)
            seq = _be32(buf, t + 4)
            ack = _be32(buf, t + 8)
            hlen = np.int64(buf[t + 12] >> 4) * 4
            flags = np.int64(buf[t + 13])
            win = _be16(buf, t + 14)
            payload = max(l4tot - hlen, 0)
            # options: bytes [t+20, t+max(hlen,20)) cut at the captured length
            oend = min(max(hlen, 20), L - l4) - 20
            p0 = t + 20
            i = 0
            while i < oend:
                kind = buf[p0 + i]
                if kind == 0:
                    break
                if kind == 1:
                    i += 1
                    continue
                if i + 1 >= oend:
                    break
                olen = np.int64(buf[p0 + i + 1])
                if olen < 2 or i + olen > oend:
                    break
                q = p0 + i + 2
                if kind == 2 and olen == 4:
                    mss = _be16(buf, q)
                elif kind == 3 and olen == 3:
                    wsc = np.int64(buf[q])
                elif kind == 4 and olen == 2:
                    sackp = True
                elif kind == 5 and (olen - 2) % 8 == 0:
                    for jj in range(0, olen - 2, 8):
                        if nblk < 4:
                            sack_o[j, 2 * nblk] = _be32(buf, q + jj)
                            sack_o[j, 2 * nblk + 1] = _be32(buf, q + jj + 4)
                        nblk += 1
                elif kind == 8 and olen == 10:
                    tsval = _be32(buf, q)
                    tsecr = _be32(buf, q + 4)
                i += olen
        elif proto == 17:
            if L < l4 + 4:
                continue
            sport = _be16(buf, t)
            dport = _be16(buf, t + 2)
            seq = -1
            ack = -1
            hlen = -1
            flags = 0
            win = -1
            payload = max(l4tot - 8, 0)
        else:
            continue
        pkt_no[j] = n
        ts[j] = np.float64(sec) + np.float64(frac) * unit
        cap_len[j] = L
        ipver[j] = ver
        proto_o[j] = proto
        ip_id_o[j] = ipid
        ip_len_o[j] = iplen
        sport_o[j] = sport
        dport_o[j] = dport
        pay_o[j] = payload
        seq_o[j] = seq
        ack_o[j] = ack
        flags_o[j] = flags
        win_o[j] = win
        hlen_o[j] = hlen
        mss_o[j] = mss
        wsc_o[j] = wsc
        sackp_o[j] = sackp
        tsval_o[j] = tsval
        tsecr_o[j] = tsecr
        nblk_o[j] = nblk
        addr_o[j, 0] = a1
        addr_o[j, 1] = a2
        j += 1
    return j


_be16 = numba.njit(inline="always")(_be16)
_be32 = numba.njit(inline="always")(_be32)
_le32 = numba.njit(inline="always")(_le32)
decode = numba.njit(cache=True, nogil=True)(decode_kernel)
walk = numba.njit(cache=True, nogil=True)(walk_kernel)
