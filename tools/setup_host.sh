#!/usr/bin/env bash
# tools/setup_host.sh [--vm]: make this machine (Debian, root) ready to record and test: the testbed's tools from
# Debian's packages (those already installed are left alone), then the BPF congestion controls built against this
# kernel's BTF (make -C testbed/cc). --vm adds what the Debian VM validations need (qemu under TCG, mmdebstrap to
# build the box: testbed/vagrant/build-box.sh). .ci/run calls it; on a new machine, before `make install` and
# tools/record_queue.sh run.
set -euo pipefail
cd "$(dirname "$0")/.."
vm=0
case "${1:-}" in
    "") ;;
    --vm) vm=1 ;;
    *) echo "error: unknown option '$1' (usage: tools/setup_host.sh [--vm])" >&2; exit 2 ;;
esac
[[ $EUID -eq 0 ]] || { echo "error: needs root (apt-get, BPF)" >&2; exit 2; }
export DEBIAN_FRONTEND=noninteractive
# vagrant + vagrant-libvirt: `vagrant validate` of the Vagrantfile on every commit (no VM is booted in CI)
apt_pkgs=(iperf3 tcpdump tshark nftables iptables ethtool iproute2 iputils-ping libnetfilter-queue-dev gcc make jq shellcheck procps
          xz-utils vagrant vagrant-libvirt
          clang llvm libbpf-dev bpftool    # BPF congestion controls (testbed/cc): bic, westwood
          python3-venv                     # the Makefile's .venv (Debian's python3 is externally managed)
          mptcpize                         # MPTCP for iperf3 (studies 001 and 003)
          ffmpeg curl d-itg                # study 002: video servers and clients, UDP background (D-ITG)
          vlc-bin vlc-plugin-base          # study 002's VLC replication (testbed/vlc002): the paper's server
          chromium-headless-shell          # the report opened in a real browser (tests/test_report_browser.py)
          ns2)                             # study 004's simulator family: the ns-2 replication (testbed/ns2_004)
if [[ $vm == 1 ]]; then
    apt_pkgs+=(qemu-system-x86 qemu-utils mmdebstrap e2fsprogs bc openssh-client)   # the Debian VM (TCG)
fi
missing=()
for p in "${apt_pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup_host: installing ${#missing[@]} package(s): ${missing[*]}" >&2
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# BPF congestion controls, built from source against this kernel's BTF (the netns tests run real bic flows)
make -C testbed/cc
