"""Playback stalls of a streamed video, from the bytes a client had received over time (a simulated player).

The received bytes are known at sample instants (``video/clientK.progress`` of study 002: the size of the file curl
is writing, every 0.1 s) and taken as linear between samples. Converted to seconds of video at the playback rate R
(kbit/s): ``D(t) = bytes(t) · 8 / (1000 · R)`` s. The player:

* waits until ``D(t) ≥ B0`` (the initial buffer, :data:`INITIAL_BUFFER_S` = 2 s of video by default) or the last
  byte of the stream has arrived, then plays at real time (one second of video per second);
* stalls when the play position P(t) catches up with D(t) (empty buffer) while more of the stream is still to come
  (the download received more bytes afterwards), and resumes once ``D(t) − P(t) ≥ B_resume`` (by default B0 again)
  or the last byte has arrived;
* an empty buffer after the last byte ever received is the end of the stream, not a stall (the last received byte is
  taken as the stream's end: the samples cannot tell a finished download from one cut off at the end of the run).

Outputs: ``startup_delay_s`` (from the request to the start of playback, s), ``stall_count`` (stalls after playback
started), ``stall_time_s`` (total time spent stalled, s; a stall still going on at the last sample counts until that
sample). All three NaN when playback never starts (no byte received).

The ITU-T P.1203 family and most player studies measure the same three quantities (initial loading delay, number and
total duration of stalling events); the thresholds here are this project's choice, not a standard's.
"""
from __future__ import annotations

import math

import numpy as np

from analysis.errors import AnalysisError

INITIAL_BUFFER_S = 2.0   # seconds of video buffered before playback starts (and before it resumes after a stall)
NAN = float("nan")
_EPS = 1e-9              # s of video: below this a buffer is empty


def playback_stalls(ts, nbytes, rate_kbps: float, *, initial_buffer_s: float = INITIAL_BUFFER_S,
                    resume_buffer_s: float | None = None, t_request: float | None = None) -> dict:
    """{"startup_delay_s", "stall_count", "stall_time_s"} of a player fed by the received-bytes samples ``nbytes``
    (bytes, non-decreasing) at times ``ts`` (s, strictly increasing, any origin) playing at ``rate_kbps`` (kbit/s =
    1000 bit/s of the received stream per second of video), with an initial buffer of ``initial_buffer_s`` and a
    resume buffer of ``resume_buffer_s`` (default: the initial one) seconds of video (module docstring).

    ``t_request``: when the client asked for the stream (s, same clock), the origin of the startup delay; samples before
    it must hold 0 bytes (they are dropped) and a (t_request, 0 bytes) point is added when the first sample is later.
    Default: the first sample. Raises AnalysisError (one line) for malformed input."""
    t = np.asarray(ts, dtype=float).ravel()
    b = np.asarray(nbytes, dtype=float).ravel()
    if t.shape != b.shape:
        raise AnalysisError(f"playback: {t.size} sample times for {b.size} byte counts")
    if t.size == 0:
        raise AnalysisError("playback: no received-bytes samples")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(b))):
        raise AnalysisError("playback: sample times and byte counts must be finite")
    if np.any(np.diff(t) <= 0):
        raise AnalysisError("playback: sample times must be strictly increasing")
    if np.any(b < 0) or np.any(np.diff(b) < 0):
        raise AnalysisError("playback: received bytes must be non-negative and non-decreasing")
    if not (math.isfinite(rate_kbps) and rate_kbps > 0):
        raise AnalysisError(f"playback: the playback rate must be a positive number of kbit/s, got {rate_kbps!r}")
    b0 = float(initial_buffer_s)
    br = b0 if resume_buffer_s is None else float(resume_buffer_s)
    if not (math.isfinite(b0) and b0 >= 0 and math.isfinite(br) and br >= 0):
        raise AnalysisError("playback: buffer thresholds must be non-negative seconds")
    if t_request is not None:
        tr = float(t_request)
        if not math.isfinite(tr):
            raise AnalysisError("playback: the request time must be finite")
        before = t < tr
        if np.any(b[before] > 0):
            raise AnalysisError("playback: bytes received before the request time")
        t, b = t[~before], b[~before]
        if t.size == 0 or t[0] > tr:
            t, b = np.concatenate(([tr], t)), np.concatenate(([0.0], b))
    t_origin = float(t[0])
    v = b * 8.0 / (1000.0 * float(rate_kbps))           # seconds of video received
    v_end = float(v[-1])

    started, playing, ended = False, False, False
    pos = 0.0                                           # play position, s of video
    t_start, stalls, stall_time, stall_since = NAN, 0, 0.0, None
    for i in range(t.size - 1):
        ta, tb, va = float(t[i]), float(t[i + 1]), float(v[i])
        s = (float(v[i + 1]) - va) / (tb - ta)          # s of video per s
        tc = ta
        while tc < tb:
            d = va + s * (tc - ta)
            if not playing:
                target = pos + (br if started else b0)
                if d >= target - _EPS or (d >= v_end - _EPS and v_end - pos > _EPS):
                    t_go = tc                           # buffer filled, or the stream's last byte is in
                elif s > 0 and va + s * (tb - ta) >= target - _EPS:
                    t_go = min(max(ta + (target - va) / s, tc), tb)
                else:
                    break                               # still waiting at tb
                if started:
                    stall_time += t_go - stall_since
                    stall_since = None
                else:
                    started, t_start = True, t_go
                playing, tc = True, t_go
                continue
            buf = max(d - pos, 0.0)
            t_empty = tc + buf / (1.0 - s) if s < 1.0 else math.inf
            if t_empty >= tb:
                pos += tb - tc
                tc = tb
                break
            pos += t_empty - tc
            tc, playing = t_empty, False
            if va + s * (t_empty - ta) < v_end - _EPS:  # more of the stream arrives later: a stall
                stalls += 1
                stall_since = t_empty
            else:                                       # nothing more comes: the end of the stream
                ended = True
                break
        if ended:
            break
    if stall_since is not None:                         # stalled at the last sample
        stall_time += float(t[-1]) - stall_since
    if not started:
        return {"startup_delay_s": NAN, "stall_count": NAN, "stall_time_s": NAN}
    return {"startup_delay_s": t_start - t_origin, "stall_count": float(stalls), "stall_time_s": float(stall_time)}
