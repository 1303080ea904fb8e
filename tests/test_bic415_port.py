"""testbed/cc/bic415.bpf.c, BIC as Linux 4.15 computes it (docs/kernel-415.md), is bic.bpf.c compiled with
BIC_LINUX_4_15: the two preprocessed programs differ in bictcp_cong_avoid's body and the registered name only, and the
4.15 body is 4.15's tcp_bic.c:147-152 (one segment per ACK in congestion avoidance, slow start's leftover dropped).
Needs clang (CI installs it); no root."""
from __future__ import annotations

import difflib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CC = ROOT / "testbed" / "cc"

pytestmark = pytest.mark.skipif(shutil.which("clang") is None or shutil.which("make") is None,
                                reason="clang and make are needed (apt-get install clang llvm libbpf-dev bpftool)")


def _preprocessed(name: str) -> str:
    subprocess.run(["make", "-s", "-C", str(CC), "build/vmlinux.h"], check=True, capture_output=True, timeout=300)
    out = subprocess.run(["clang", "-E", "-P", "-target", "bpf", "-D__TARGET_ARCH_x86", f"-I{CC / 'build'}",
                          str(CC / name)], check=True, capture_output=True, text=True, timeout=300).stdout
    # the program only: everything from the port's own first definition on (vmlinux.h and the helpers are shared)
    return out[out.index("char _license[]"):]


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_bic415_differs_from_bic_in_cong_avoid_and_name_only():
    a, b = _preprocessed("bic.bpf.c").splitlines(), _preprocessed("bic415.bpf.c").splitlines()
    changed_a, changed_b = [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            changed_a += a[i1:i2]
            changed_b += b[j1:j2]
    old, new = _squash(" ".join(changed_a)), _squash(" ".join(changed_b))
    # 6.1's slow start / congestion avoidance and the name "bic" on one side ...
    assert "acked = tcp_slow_start(tp, acked);" in old and "tcp_cong_avoid_ai(tp, ca->cnt, acked);" in old
    assert re.search(r'struct tcp_congestion_ops bic = \{', "\n".join(a))
    # ... 4.15's (tcp_bic.c:147-152) and "bic415" on the other
    assert "if (tcp_in_slow_start(tp)) tcp_slow_start(tp, acked); else {" in new
    assert "tcp_cong_avoid_ai(tp, ca->cnt, 1);" in new
    assert re.search(r'struct tcp_congestion_ops bic415 = \{', "\n".join(b))
    assert '"bic415"' in new and '"bic"' in old
    # nothing else: the changed lines are those of the cong_avoid body, the struct's head and its name
    for line in changed_a + changed_b:
        s = line.strip()
        assert (not s or "slow_start" in s or "cong_avoid_ai" in s or "bictcp_update" in s or s in ("{", "}", "else {")
                or s.startswith(("if (!acked)", "return;", "struct tcp_congestion_ops", ".name"))), line


def _copy(tmp_path, name):
    d = tmp_path / "bic415-kernel"
    d.mkdir(exist_ok=True)
    shutil.copy(CC / "bic415-kernel" / name, d / name)
    return d


def test_build_refuses_a_missing_or_different_source_in_one_line(tmp_path):
    """The module's native side (testbed/cc/bic415-kernel/build.sh): no file, or a file that is not 4.15's
    tcp_bic.c (sha256), is a one-line error before anything is built."""
    d = _copy(tmp_path, "build.sh")
    res = subprocess.run(["bash", str(d / "build.sh"), "--check"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "src/tcp_bic.c is missing: run testbed/cc/bic415-kernel/fetch.sh" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    (d / "src").mkdir()
    (d / "src" / "tcp_bic.c").write_text("/* not 4.15's */\n")
    res = subprocess.run(["bash", str(d / "build.sh"), "--check"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "has sha256" in res.stderr and "expected 7782b8d8" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (d / "build").exists()


def test_fetch_refuses_a_bad_package_in_one_line(tmp_path):
    d = _copy(tmp_path, "fetch.sh")
    res = subprocess.run(["bash", str(d / "fetch.sh"), "--deb", str(tmp_path / "none.deb")], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 1 and res.stderr.strip() == f"fetch.sh: --deb: no file '{tmp_path / 'none.deb'}'"
    fake = tmp_path / "fake.deb"
    fake.write_bytes(b"!<arch>\n")
    res = subprocess.run(["bash", str(d / "fetch.sh"), "--deb", str(fake)], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 1 and "has sha256" in res.stderr and "expected e4d60d7a" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not (d / "src").exists()
