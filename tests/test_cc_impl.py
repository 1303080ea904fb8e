"""analysis.cc_impl: which implementation of each congestion control ran, in words, from meta.json cc_impl records
(the two controllers that have been called pcc_vivace are told apart by their source blob), and the scorecard line."""
import json

from analysis import cc_impl

OLD = "22ba95c780d71029215d690f231d0dd2b000d63b"
PORT = "9151ae5d83fbcab594692e5b23b201127ba511ef"


def bpf(src, blob, sha="ab" * 32):
    return {"implementation": "bpf", "object_sha256": sha, "source": src, "source_git_blob": blob}


def test_describe():
    assert cc_impl.describe("cubic", {"implementation": "kernel"}) == "the kernel's own module"
    old = cc_impl.describe("pcc_vivace", bpf("testbed/cc/pcc_vivace.bpf.c", OLD))
    assert old.startswith("the Vivace-paper / PCC-Uspace controller") and "source blob 22ba95c780d7…" in old
    port = cc_impl.describe("pcc_vivace", bpf("testbed/cc/pcc_vivace.bpf.c", PORT))
    assert port.startswith("BPF port of PCC-Kernel's vivace module (testbed/cc/pcc_vivace.bpf.c, object sha256 abab")
    assert cc_impl.describe("bic", bpf("testbed/cc/bic.bpf.c", None)).startswith("BPF port of Linux's tcp_bic.c")
    assert cc_impl.describe("x", {}) == "not recorded"


def test_counts_and_line():
    metas = [("r1", {"cc_impl": {"cubic": {"implementation": "kernel"}}}),
             ("r2", {"cc_impl": {"pcc_vivace": bpf("testbed/cc/pcc_vivace.bpf.c", PORT)}}),
             ("r3", {"cc_impl": {"pcc_vivace": bpf("testbed/cc/pcc_vivace.bpf.c", PORT)}}),
             ("r4", {})]
    t = cc_impl.implementations(metas)
    assert t[["cc", "runs"]].values.tolist() == [["cubic", 1], ["pcc_vivace", 2]]
    line = cc_impl.line(t)
    assert line.startswith("cubic: the kernel's own module (1 runs); pcc_vivace: BPF port of PCC-Kernel's vivace")
    assert line.endswith("(2 runs)") and cc_impl.line(t.iloc[:0]) == "not recorded"


def test_scorecard_names_the_implementations(tmp_path, capsys):
    """mpcc scorecard prints the line and puts the rows in its JSON (a run-directory campaign of two runs)."""
    from mpcc.cli import main
    for rid, impl in (("single_vs_multi__cubic__multipath__d10ms__l0pct__rep01", {"implementation": "kernel"}),):
        d = tmp_path / "runs" / rid
        d.mkdir(parents=True)
        (d / "meta.json").write_text(json.dumps({"cc_impl": {"cubic": impl}}))
    main(["scorecard", str(tmp_path), "--no-progress", "--n-boot", "200"])
    assert "# congestion controls: cubic: the kernel's own module (1 runs)" in capsys.readouterr().out
