"""testbed/cc/struct_ops_lib.sh struct_ops_id on the two forms of ``bpftool -j struct_ops dump``: the state under
"common" (Linux 6.9 on, the host) and directly under the ops (the Debian VM's 6.1: its dump as measured there on
2026-11-26, shortened to the fields read). A fake bpftool on PATH prints the dump; no root needed."""
import json
import subprocess
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "testbed" / "cc" / "struct_ops_lib.sh"


def dump(form, maps):
    """maps: [(id, name, state)] -> bpftool's JSON list: a bpf_map_info entry, then its ops entry."""
    out = []
    for mid, name, state in maps:
        out.append({"bpf_map_info": {"type": 26, "id": mid, "name": name}})
        ops = {"refcnt": {"refs": {"counter": 1}}, "state": state} if form == "6.1" else \
            {"common": {"refcnt": {"refs": {"counter": 1}}, "state": state}}
        ops["data"] = {"name": name}
        out.append({"bpf_struct_ops_tcp_congestion_ops": ops})
    return json.dumps(out)


def struct_ops_id(tmp_path, text, name):
    (tmp_path / "dump.json").write_text(text)
    fake = tmp_path / "bin" / "bpftool"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(f"#!/bin/sh\ncat {tmp_path / 'dump.json'}\n")
    fake.chmod(0o755)
    r = subprocess.run(["bash", "-c", f'set -euo pipefail; source "{LIB}"; struct_ops_id "$1"', "_", name],
                       capture_output=True, text=True, env={"PATH": f"{fake.parent}:/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.parametrize("form", ["6.1", "6.18"])
def test_the_registered_map_is_found_in_either_form(tmp_path, form):
    text = dump(form, [(2, "pcc_vivace", "BPF_STRUCT_OPS_STATE_TOBEFREE"), (5, "pcc_vivace", "BPF_STRUCT_OPS_STATE_INUSE"),
                       (7, "bic", "BPF_STRUCT_OPS_STATE_INUSE")])
    assert struct_ops_id(tmp_path, text, "pcc_vivace") == "5"          # the stale map (lower id) is not it
    assert struct_ops_id(tmp_path, text, "bic") == "7"
    assert struct_ops_id(tmp_path, text, "westwood") == ""


def test_only_a_stale_map_is_not_registered(tmp_path):
    assert struct_ops_id(tmp_path, dump("6.1", [(2, "bic", "BPF_STRUCT_OPS_STATE_TOBEFREE")]), "bic") == ""
