"""analysis.figures: ss sample parsing (hand-written ss output, answers known by construction), BDP, per-group
means with CIs, paper-vs-ours joins; bundle's capture priority."""
import gzip
import lzma

import numpy as np
import pandas as pd
import pytest

from analysis.figures import bdp_packets, cwnd_series, data_connection, mean_ci, paper_vs_ours, parse_ss, ss_path
from analysis.figures.coverage import apply_filters, experiment_rows, run_coverage

# Two samples; each lists iperf3's control connection (port 40000, few bytes, default cc) and the data connection
# (port 40002, cubic, megabytes). Format as written by capture_tools (`# ts=` then `ss -ti` output).
SS_TEXT = """# ts=1000.0
State Recv-Q Send-Q Local Address:Port  Peer Address:PortProcess
ESTAB 0      0           10.1.1.2:40000     10.4.1.2:5201
\t bbr wscale:10,10 rto:212 rtt:10.195/2.211 ato:40 mss:1448 pmtu:1500 rcvmss:536 advmss:1448 cwnd:13 bytes_sent:185 bytes_acked:186 segs_out:7
ESTAB 0      241816      10.1.1.2:40002     10.4.1.2:5201
\t ts sack cubic wscale:10,10 rto:220 rtt:20.5/1.25 mss:1448 pmtu:1500 rcvmss:536 advmss:1448 cwnd:40 ssthresh:30 bytes_sent:2000000 bytes_acked:1900000 unacked:12 retrans:0/3 delivery_rate 9000000bps pacing_rate 18000000bps minrtt:10.1
# ts=1000.5
State Recv-Q Send-Q Local Address:Port  Peer Address:PortProcess
ESTAB 0      0           10.1.1.2:40000     10.4.1.2:5201
\t bbr wscale:10,10 rto:212 rtt:10.2/2.2 mss:1448 cwnd:13 bytes_sent:185 bytes_acked:186
ESTAB 0      241816      10.1.1.2:40002     10.4.1.2:5201
\t ts sack cubic wscale:10,10 rto:220 rtt:30/2 mss:1448 cwnd:55 ssthresh:30 bytes_sent:4000000 bytes_acked:3900000 retrans:1/5 minrtt:10.1
"""


def test_parse_ss_rows_and_fields():
    s = parse_ss(SS_TEXT)
    assert len(s) == 4
    assert list(s["ts"]) == [1000.0, 1000.0, 1000.5, 1000.5]
    d = s[s["local"] == "10.1.1.2:40002"].iloc[0]
    assert d["cc"] == "cubic" and d["state"] == "ESTAB" and d["peer"] == "10.4.1.2:5201"
    assert (d["cwnd_pkts"], d["ssthresh_pkts"], d["mss_bytes"]) == (40, 30, 1448)
    assert (d["rtt_ms"], d["rttvar_ms"], d["minrtt_ms"]) == (20.5, 1.25, 10.1)
    assert (d["bytes_acked"], d["bytes_sent"], d["unacked_pkts"], d["retrans_total"]) == (1900000, 2000000, 12, 3)
    assert (d["delivery_rate_bps"], d["pacing_rate_bps"]) == (9e6, 18e6)
    c = s[s["local"] == "10.1.1.2:40000"].iloc[0]
    assert c["cc"] == "bbr" and np.isnan(c["ssthresh_pkts"])


def test_data_connection_ignores_the_control_connection():
    d = data_connection(parse_ss(SS_TEXT))
    assert set(d["local"]) == {"10.1.1.2:40002"}
    c = cwnd_series(parse_ss(SS_TEXT))
    assert list(c["t_s"]) == [0.0, 0.5]
    assert list(c["cwnd_pkts"]) == [40, 55]
    assert list(c["cwnd_bytes"]) == [40 * 1448, 55 * 1448]


def test_parse_ss_reads_files_and_gzip(tmp_path):
    run = tmp_path / "run"
    (run / "ss").mkdir(parents=True)
    assert ss_path(run, 1) is None
    with gzip.open(run / "ss" / "flow1.txt.gz", "wt") as f:
        f.write(SS_TEXT)
    p = ss_path(run, 1)
    assert p.name == "flow1.txt.gz"
    pd.testing.assert_frame_equal(parse_ss(p), parse_ss(SS_TEXT))
    (run / "ss" / "flow1.txt.xz").write_bytes(lzma.compress(SS_TEXT.encode(), format=lzma.FORMAT_XZ))
    assert ss_path(run, 1).name == "flow1.txt.xz"  # the bundle's form wins over a leftover .gz
    pd.testing.assert_frame_equal(parse_ss(ss_path(run, 1)), parse_ss(SS_TEXT))
    (run / "ss" / "flow1.txt").write_text(SS_TEXT)
    assert ss_path(run, 1).name == "flow1.txt"
    pd.testing.assert_frame_equal(parse_ss(ss_path(run, 1)), parse_ss(SS_TEXT))


def test_parse_ss_empty():
    s = parse_ss("# ts=1.0\nState Recv-Q Send-Q Local Address:Port  Peer Address:PortProcess\n")
    assert s.empty and "cwnd_pkts" in s
    assert data_connection(s).empty


def test_bdp_packets():
    # 20 Mbit/s x 100 ms = 250 000 bytes = 172.65 packets of 1448 bytes
    assert bdp_packets(20, 100, 1448) == pytest.approx(250000 / 1448)
    assert bdp_packets(10, 10, 1000) == pytest.approx(12.5)


def test_mean_ci_groups():
    df = pd.DataFrame({"cc": ["a"] * 4 + ["b"] + ["c"] * 3 + ["d"],
                       "x": [1.0, 2.0, 3.0, 4.0, 7.0, 5.0, 5.0, 5.0, np.nan]})
    s = mean_ci(df, "cc", "x", n_boot=999).set_index("cc")
    assert list(s.index) == ["a", "b", "c"]  # d has no finite value
    assert s.loc["a", "n"] == 4 and s.loc["a", "mean"] == pytest.approx(2.5)
    assert s.loc["a", "ci_low"] < 2.5 < s.loc["a", "ci_high"]
    assert s.loc["a", "ci_low"] >= 1.0 and s.loc["a", "ci_high"] <= 4.0
    assert s.loc["b", "n"] == 1 and np.isnan(s.loc["b", "ci_low"]) and s.loc["b", "ci_method"] == "n<2"
    assert (s.loc["c", "ci_low"], s.loc["c", "ci_high"], s.loc["c", "ci_method"]) == (5.0, 5.0, "none")
    assert mean_ci(df.iloc[0:0], "cc", "x").empty


def test_paper_vs_ours():
    ours = pd.DataFrame({"cc": ["reno", "cubic"], "n": [10, 10], "mean": [9.0, 10.0], "ci_low": [8.5, 9.9],
                         "ci_high": [9.6, 10.1]})
    paper = pd.DataFrame({"cc": ["reno", "cubic", "bic"], "thr": [9.57, 9.57, 9.57]})
    t = paper_vs_ours(ours, paper, "cc", "thr").set_index("cc")
    assert bool(t.loc["reno", "paper_in_ci"]) is True
    assert bool(t.loc["cubic", "paper_in_ci"]) is False
    assert pd.isna(t.loc["bic", "ours"]) and pd.isna(t.loc["bic", "paper_in_ci"])
    assert t.loc["cubic", "diff"] == pytest.approx(10.0 - 9.57)


def test_experiment_rows_and_coverage():
    df = pd.DataFrame({"run_id": ["e__a__rep01", "e__a__rep02", "f__a__rep01"], "experiment": ["e", "e", "f"],
                       "cc": ["reno", "cubic", "reno"]})
    df.attrs["runs"] = pd.DataFrame({"run_id": ["e__a__rep01", "e__a__rep02", "e__b__rep01", "f__a__rep01", "g__x"],
                                     "status": ["complete", "complete", "skipped", "complete", "incomplete"],
                                     "reason": ["", "", "bic: not available", "", "no COMPLETE marker"],
                                     "experiment": ["e", "e", "e", "f", "g"]})
    said = []
    rows = experiment_rows(df, "e", {"cc": "reno"}, say=said.append)
    assert list(rows["run_id"]) == ["e__a__rep01"] and rows.attrs == {}
    assert said[0].startswith("e: 2 complete, 1 skipped, 0 incomplete") and "bic: not available" in said[1]
    said.clear()
    assert experiment_rows(df, "g", say=said.append).empty
    assert "No complete runs of g" in said[-1]
    cov = run_coverage(df, "e")
    assert cov["runs"].sum() == 3
    with pytest.raises(KeyError):
        apply_filters(df, {"nope": 1})


def test_ccs_once_flowing_skips_samples_before_iperf3_sets_the_cc():
    """Samples before 10,000 bytes are acked (SYN-SENT, or ESTAB with iperf3's 37-byte cookie) may show the
    namespace's default CC; from there on only the CC under test counts."""
    from analysis.figures.ss_samples import ccs_once_flowing

    s = pd.DataFrame({"cc": ["bbr", "bbr", "westwood", "westwood", None],
                      "bytes_acked": [np.nan, 37, 37, 66_646, 1e6]})
    assert ccs_once_flowing(s) == ["westwood"]
    assert ccs_once_flowing(s, min_acked_bytes=0) == ["bbr", "westwood"]
    assert ccs_once_flowing(s.assign(cc=["bbr", "bbr", "westwood", "bbr", "westwood"])) == ["bbr", "westwood"]


def test_band_panels_legend_names_every_series_and_wraps_rows():
    """analysis.figures.band_panels: a congestion control absent from the first panel is still in the one legend
    (paper band first, then the CCs in the fixed CC order); ncols wraps panels into rows; unused cells are hidden."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from analysis.figures import band_panels
    s = pd.DataFrame({"arm": ["a", "a", "b", "b", "c"], "cc": ["cubic", "cubic", "reno", "bic", "cubic"],
                      "x": [12.0, 16.0, 12.0, 12.0, 20.0], "mean": [7.0, 3.0, 7.2, 7.1, 0.3],
                      "ci_low": [6.9, 2.9, 7.0, 7.0, 0.2], "ci_high": [7.1, 3.1, 7.4, 7.2, 0.4]})
    fig = band_panels(s, "arm", "x", hue="cc", band=(8, 10), band_label="paper", xlabel="x (u)", ylabel="y (u)",
                      title="t", panel_order=["a", "b", "c"], ncols=2)
    axes = fig.axes
    assert len(axes) == 4 and [ax.get_visible() for ax in axes] == [True, True, True, False]
    legend = axes[1].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["paper", "reno (ours)", "bic (ours)", "cubic (ours)"]
    assert axes[0].get_ylabel() == "y (u)" and axes[2].get_ylabel() == "y (u)"
    assert axes[0].get_xlim() == axes[2].get_xlim()          # shared x axis
    plt.close(fig)
