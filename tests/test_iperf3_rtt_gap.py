"""tools/iperf3_rtt_gap.py: both RTT definitions side by side, on hand-made rows and iperf3 JSON with known means."""
import json
import lzma
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import iperf3_rtt_gap as gap  # noqa: E402


def _run(runs: Path, rid: str, mean_rtt_us: float | None, xz: bool = False) -> None:
    d = runs / rid / "iperf3"
    d.mkdir(parents=True)
    if mean_rtt_us is None:
        return
    doc = json.dumps({"end": {"streams": [{"sender": {"mean_rtt": mean_rtt_us}}]}}).encode()
    if xz:
        (d / "flow1-client.json.xz").write_bytes(lzma.compress(doc))
    else:
        (d / "flow1-client.json").write_bytes(doc)


def _row(rid, cc, loss, rtt, experiment="loss_rate", cc2=None, flow=1, delay=10.0):
    return {"run_id": rid, "experiment": experiment, "cc": cc, "cc2": cc2, "flow": flow, "path_mode": "multipath",
            "link_delay_ms": delay, "loss_pct": float(loss), "rtt_mean_ms": rtt}


def test_both_definitions_and_gaps(tmp_path):
    runs = tmp_path / "runs"
    _run(runs, "b1", 20_000)
    _run(runs, "b2", 30_000, xz=True)
    _run(runs, "r1", 11_000)
    _run(runs, "r2", None)                                  # no client JSON: counted by router1 only
    _run(runs, "p1", 99_000)                                # a pair run: not a single flow
    df = pd.DataFrame([_row("b1", "bbr", 5, 24.0), _row("b2", "bbr", 5, 28.0), _row("r1", "reno", 5, 12.0),
                       _row("r2", "reno", 5, 14.0), _row("p1", "reno", 5, 50.0, experiment="tcp_fairness",
                                                         cc2="bbr"),
                       _row("b1", "bbr", 5, 1.0, flow=2)])
    rows = gap.single_flow_rows(df, "loss_rate", [5.0])
    assert sorted(rows["run_id"]) == ["b1", "b2", "r1", "r2"]
    cells = gap.table(rows, runs)
    assert cells[(5.0, "bbr")] == {"router1": [24.0, 28.0], "iperf3": [20.0, 30.0]}
    assert cells[(5.0, "reno")] == {"router1": [12.0, 14.0], "iperf3": [11.0]}
    (line,) = gap.lines(cells, "%")
    assert line == ("5 %: bbr router1 26.0 (n=2), iperf3 25.0 (n=2); reno router1 13.0 (n=2), iperf3 11.0 (n=1), "
                    "gap to bbr router1 -13.0 / iperf3 -14.0")


def test_bad_input_is_one_line(tmp_path, capsys):
    assert gap.main([str(tmp_path / "nothing")]) == 2
    assert gap.main([str(tmp_path), "--levels", "x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(e.startswith("error: ") for e in err)
