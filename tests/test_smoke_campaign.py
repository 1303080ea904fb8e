"""The smoke campaign for real on the netns backend (root; CI runs it): every experiment type end to end, two runs
at a time (``--jobs 2``) on separate namespace testbeds."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.netns_helpers import rate_floor, run_campaign, steal_share
from scipy import stats

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.netns, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
              pytest.mark.skipif(not (REPO / "capture_tools/run_experiment.sh").exists(),
                                 reason="capture tool not built")]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = run_campaign(REPO / "campaigns/smoke.yaml", tmp_path_factory.mktemp("smoke"), "smk-", "--jobs", "2")
    if shutil.which("bpftool"):  # no congestion control of ours left registered (testbed/cc/ccctl.sh)
        regs = subprocess.run(["bpftool", "struct_ops", "show"], capture_output=True, text=True).stdout
        assert not list(Path(os.environ.get("MPCC_CC_STATE", "/run/mpcc-cc")).glob("*.id")), regs
    # two workers, each on its own testbed (prefixes smk-1-, smk-2-): the checks below hold for parallel runs too
    assert json.loads((out / "campaign.json").read_text())["sessions"][-1]["jobs"] == 2
    return out / "runs"


def _run(runs, prefix):
    [d] = [d for d in runs.iterdir() if d.name.startswith(prefix) and ".incomplete-" not in d.name]
    return d


def _server_mbps(run_dir, flow="flow1"):
    doc = json.loads((run_dir / "iperf3" / f"{flow}-server.json").read_text())
    return doc["end"]["sum_received"]["bits_per_second"] / 1e6


def test_every_run_complete_or_skipped_with_reason(smoke):
    dirs = [d for d in smoke.iterdir() if ".incomplete-" not in d.name]
    assert len(dirs) == 7
    for d in dirs:
        if (d / "SKIPPED").exists():
            assert "not available on this kernel" in (d / "SKIPPED").read_text()
            continue
        assert (d / "COMPLETE").exists(), d.name
        for f in ("router1.pcap", "receiver.pcap", "meta.json", "params.json", "iperf3/flow1-client.json"):
            assert (d / f).exists(), f"{d.name}: {f}"
        meta = json.loads((d / "meta.json").read_text())
        assert meta.get("kernel")


def test_bic_runs_where_the_kernel_lacks_it(smoke):
    """The smoke campaign's bic run completes through the BPF port (testbed/cc) when the kernel has no tcp_bic and
    bpftool/clang are installed (CI installs them); meta.json says which implementation ran."""
    d = _run(smoke, "loss_rate__bic__")
    if (d / "SKIPPED").exists():
        pytest.fail((d / "SKIPPED").read_text())
    impl = json.loads((d / "meta.json").read_text())["cc_impl"]["bic"]["implementation"]
    assert impl in ("kernel", "bpf")


def test_single_vs_multipath_goodput(smoke):
    ds, dm = _run(smoke, "single_vs_multi__cubic__single"), _run(smoke, "single_vs_multi__cubic__multipath")
    single, multi = _server_mbps(ds), _server_mbps(dm)
    # floors scaled by the share of time the host kept (netns_helpers.rate_floor: hypervisor steal)
    assert rate_floor(ds, 9.5 * 0.85) <= single <= 9.5 * 1.15, (single, steal_share(ds))
    assert rate_floor(dm, 19.0 * 0.85) <= multi <= 19.0 * 1.15, (multi, steal_share(dm))


def test_sack_blocks_with_multipath_or_loss(smoke):
    from analysis.ingest import read_pcap
    for prefix in ("single_vs_multi__cubic__multipath", "loss_rate__cubic"):
        df = read_pcap(_run(smoke, prefix) / "router1.pcap")
        assert int(df["sack_blocks"].sum()) > 0, prefix


def test_forward_loss_within_binomial_bounds(smoke):
    """Data packets seen at router1 (before the switches) vs at router2's dst side (after): 2 % random loss."""
    from analysis.ingest import read_pcap
    d = _run(smoke, "loss_rate__cubic")
    tx, rx = read_pcap(d / "router1.pcap"), read_pcap(d / "receiver.pcap")
    key = ["seq", "payload_len", "ip_id"]
    sel = lambda df: df[(df.proto == 6) & (df.payload_len > 0) & (df.src == "10.1.1.2")]
    sent = sel(tx)[key].drop_duplicates()
    got = sel(rx)[key].drop_duplicates()
    n = len(sent)
    lost = n - len(sent.merge(got, on=key))
    lo, hi = stats.binom.ppf([0.0005, 0.9995], n, 0.02)
    assert n > 500
    assert lo <= lost <= hi, (lost, n, lo, hi)


def test_self_check_recorded_round_robin_parity_and_rtt(smoke):
    """Every complete run's meta.json carries the per-run self-check: strict round-robin parity in both directions
    on multipath runs (counters diffed over the run), an idle path 2 on single-path runs, idle RTT near the delay."""
    checked = 0
    for d in smoke.iterdir():
        if ".incomplete-" in d.name or not (d / "COMPLETE").exists():
            continue
        meta = json.loads((d / "meta.json").read_text())
        sc = meta["self_check"]
        for router in ("router1", "router2"):
            rr = sc["round_robin"][router]
            if meta["params"]["path_mode"] == "multipath":
                assert rr["parity_ok"] is True, (d.name, router, rr)
                assert rr["path1_pkts"] > 100 and rr["path2_pkts"] > 100, (d.name, router, rr)
            else:
                assert rr["single_path_ok"] is True, (d.name, router, rr)
        assert sc["rtt_median_ms"] is not None
        assert abs(sc["rtt_median_ms"] - sc["expected_rtt_ms"]) <= 2.0, (d.name, sc)
        hl = meta["host_load"]  # CPU contention on the host while the flows ran (PSI "some" share, %)
        assert hl["ncpu"] >= 1 and hl["loadavg_1min_start"] >= 0
        assert hl["cpu_pressure_some_pct"] is None or 0 <= hl["cpu_pressure_some_pct"] <= 100, hl
        assert hl["cpu_steal_pct"] is None or 0 <= hl["cpu_steal_pct"] <= 100, hl     # /proc/stat steal
        checked += 1
    assert checked >= 5
