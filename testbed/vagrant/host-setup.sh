#!/usr/bin/env bash
# Prepare a Linux host for the libvirt provider: Debian packages, libvirt daemons (started by hand when there is no
# systemd), a `default` storage pool. Idempotent; safe to re-run.
# usage: host-setup.sh [--no-install]
set -euo pipefail
install=1
case "${1:-}" in
    "") ;;
    --no-install) install=0 ;;
    *) echo "usage: host-setup.sh [--no-install]" >&2; exit 2 ;;
esac
log() { echo "[$(date -u +%H:%M:%S)] host-setup: $*" >&2; }
[[ $EUID -eq 0 ]] || { echo "error: host-setup.sh needs root" >&2; exit 2; }

PKGS=(vagrant vagrant-libvirt libvirt-daemon-system libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86 qemu-utils
      mmdebstrap dnsmasq-base e2fsprogs jq openssh-client)
if [[ $install == 1 ]]; then
    missing=()
    for p in "${PKGS[@]}"; do
        [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *"install ok installed"* ]] || missing+=("$p")
    done
    if [[ ${#missing[@]} -gt 0 ]]; then
        log "installing ${missing[*]}"
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    fi
fi

# /dev/kvm without group access (no udev here): libvirt then sees KVM in qemu's capability probe but "not usable" for
# its qemu user, throws the cached capabilities away and re-probes qemu on EVERY lookup (~15 s each: `vagrant up` of
# 8 VMs crawls). Give it the permissions Debian's udev rule gives it: root:kvm 0660.
if [[ -c /dev/kvm ]] && getent group kvm >/dev/null && [[ "$(stat -c %G:%a /dev/kvm)" != kvm:66? ]]; then
    log "setting /dev/kvm to root:kvm 0660 (Debian's udev default; no udev here)"
    chgrp kvm /dev/kvm
    chmod 0660 /dev/kvm
fi

# Daemons: use the init system when there is one, else start them by hand.
if ! virsh -c qemu:///system version >/dev/null 2>&1; then
    if [[ -d /run/systemd/system ]]; then
        systemctl start virtlogd libvirtd >&2
    else
        mkdir -p /var/log/libvirt /var/lib/libvirt /run/libvirt
        pgrep -x virtlogd >/dev/null || virtlogd -d
        pgrep -x libvirtd >/dev/null || libvirtd -d
    fi
    for _ in $(seq 50); do virsh -c qemu:///system version >/dev/null 2>&1 && break; sleep 0.2; done
fi
virsh -c qemu:///system version >/dev/null 2>&1 || { echo "error: libvirtd does not answer on qemu:///system" >&2; exit 1; }

if ! virsh -c qemu:///system pool-info default >/dev/null 2>&1; then
    log "defining storage pool 'default' at /var/lib/libvirt/images"
    mkdir -p /var/lib/libvirt/images
    virsh -c qemu:///system pool-define-as default dir --target /var/lib/libvirt/images >/dev/null
fi
[[ "$(virsh -c qemu:///system pool-info default | awk '/^State:/{print $2}')" == running ]] \
    || virsh -c qemu:///system pool-start default >/dev/null
virsh -c qemu:///system pool-autostart default >/dev/null 2>&1 || true

# qemu wrapper with a smaller TCG translation cache (MPCC_TCG_TB_MB, default 256 MiB)
tb_mb="${MPCC_TCG_TB_MB:-256}"
[[ "$tb_mb" =~ ^[1-9][0-9]*$ ]] || { echo "error: MPCC_TCG_TB_MB must be a positive integer" >&2; exit 2; }
mkdir -p /usr/local/libexec
sed "s/^TB_MB=.*/TB_MB=$tb_mb/" "$(dirname "${BASH_SOURCE[0]}")/qemu-tcg-wrapper.sh" > /usr/local/libexec/mpcc-qemu-tcg.tmp
chmod 0755 /usr/local/libexec/mpcc-qemu-tcg.tmp
mv /usr/local/libexec/mpcc-qemu-tcg.tmp /usr/local/libexec/mpcc-qemu-tcg

# KVM usable? (a paravirtual /dev/kvm may exist and still not run stock guests at speed: see docs/vagrant.md)
if [[ -z "${MPCC_LIBVIRT_DRIVER:-}" ]]; then
    log "MPCC_LIBVIRT_DRIVER unset: the Vagrantfile uses qemu (TCG) unless you set MPCC_LIBVIRT_DRIVER=kvm"
fi
log "ok: libvirt $(virsh -c qemu:///system version 2>/dev/null | awk '/Running hypervisor/{print $NF}'), pool default ready"
