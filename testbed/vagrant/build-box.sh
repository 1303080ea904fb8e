#!/usr/bin/env bash
# Build a small Debian box for the libvirt provider from Debian packages only (no box catalogue needed):
#   mmdebstrap (minbase + kernel, systemd, sshd, iproute2, iperf3, tcpdump, nft, ...) -> ext4 raw image
#   (mkfs.ext4 -d, no partition table, no loop devices) -> qcow2 -> box.tar.gz -> `vagrant box add`.
# The kernel and initrd travel inside the box; the box's own Vagrantfile boots them directly
# (root=/dev/vda, console=ttyS0, net.ifnames=0 so that eth0 is always the management NIC). No `rootdelay`.
# --extra-kernel ubuntu:VERSION also installs one of Ubuntu's generic kernels (the image and its modules, from
# Ubuntu's archive, sha256-checked against EXTRA_KERNEL_SHA256 below) beside Debian's, with an initrd made by the box's
# own initramfs-tools (gzip: kernels before 5.9 cannot unpack zstd): the box then ships vmlinuz-KREL and
# initrd.img-KREL beside its default vmlinuz/initrd.img, which testbed/lib/qemu_box.sh boots when asked for KREL (the
# same image, another kernel: docs/kernel-415.md). Study 000's paper ran Linux 4.15 (Ubuntu 16.04's hardware
# enablement kernel): --extra-kernel ubuntu:4.15.0-54.58.
# usage: build-box.sh [--name NAME] [--suite SUITE] [--mirror URL] [--size-gb N] [--extra-kernel ubuntu:VERSION] [--force]
#   NAME defaults to $MPCC_VAGRANT_BOX or mpcc/debian12; --force rebuilds and re-adds an existing box.
set -euo pipefail
name="${MPCC_VAGRANT_BOX:-mpcc/debian12}" suite=bookworm mirror="" size_gb=3 force=0 extra_kernel=""
UBUNTU_POOL="${MPCC_UBUNTU_POOL:-http://archive.ubuntu.com/ubuntu/pool/main/l/linux}"
# the packages of each known extra kernel, by sha256 (a version not listed here is refused: add its three hashes
# after checking them against Ubuntu's Packages index or Launchpad)
declare -A EXTRA_KERNEL_SHA256=(
    [4.15.0-54.58/linux-image-unsigned]=cd58627ce1e0ec5463583b7fe19d0fa96fdc9fe785e4361261f243555337fa8e
    [4.15.0-54.58/linux-modules]=5be895a00d97c7d4659a0ac63dedf7f45927cbd7c3d5db84f07877ac715ff451
    [4.15.0-54.58/linux-modules-extra]=b281bd918ab5eacdf12a5867fc9cc77cfb6d283b467f2657bbb2e6b6d8f81931
)
die() { echo "error: $*" >&2; exit 2; }
log() { echo "[$(date -u +%H:%M:%S)] build-box: $*" >&2; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --name) name=${2:-}; shift 2 || die "--name needs a value" ;;
        --suite) suite=${2:-}; shift 2 || die "--suite needs a value" ;;
        --mirror) mirror=${2:-}; shift 2 || die "--mirror needs a value" ;;
        --size-gb) size_gb=${2:-}; shift 2 || die "--size-gb needs a value" ;;
        --extra-kernel) extra_kernel=${2:-}; shift 2 || die "--extra-kernel needs a value" ;;
        --force) force=1; shift ;;
        *) die "unknown option $1 (usage: build-box.sh [--name NAME] [--suite SUITE] [--mirror URL] [--size-gb N] [--extra-kernel ubuntu:VERSION] [--force])" ;;
    esac
done
[[ "$name" =~ ^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)?$ ]] || die "bad box name '$name'"
[[ "$suite" =~ ^[a-z]+$ ]] || die "bad suite '$suite'"
[[ "$size_gb" =~ ^[1-9][0-9]*$ ]] || die "--size-gb must be a positive integer, got '$size_gb'"
kver="" krel=""
if [[ -n "$extra_kernel" ]]; then
    [[ "$extra_kernel" =~ ^ubuntu:([0-9]+\.[0-9]+\.[0-9]+-([0-9]+))\.[0-9]+$ ]] \
        || die "--extra-kernel must be ubuntu:VERSION (e.g. ubuntu:4.15.0-54.58), got '$extra_kernel'"
    kver=${extra_kernel#ubuntu:}
    krel="${BASH_REMATCH[1]}-generic"
    [[ -v "EXTRA_KERNEL_SHA256[$kver/linux-modules]" ]] \
        || die "--extra-kernel: no known sha256 for Ubuntu's $kver (known: $(printf '%s\n' "${!EXTRA_KERNEL_SHA256[@]}" | cut -d/ -f1 | sort -u | tr '\n' ' '))"
fi
[[ $EUID -eq 0 ]] || die "build-box.sh needs root (mmdebstrap in root mode)"
for t in mmdebstrap mkfs.ext4 qemu-img vagrant tar ${krel:+curl dpkg-deb sha256sum}; do command -v "$t" >/dev/null || die "$t not found: run testbed/vagrant/host-setup.sh"; done

# Bump when what the box contains or how it boots changes: an added box of an older revision is rebuilt.
BOX_REVISION=6   # 2: mitigations=off on the kernel command line; 3: bpftool (BPF congestion-control ports, testbed/cc);
                 # 4: linux-headers-amd64 and make (out-of-tree modules: PCC-Kernel's vivace, docs/pcc-vivace.md);
                 # 5: mptcpize (MPTCP iperf3 in the guest: study 003's queue-discipline experiment, docs/qdisc-003.md)
                 # 6: mininet, openvswitch-switch, python3 (Mininet's API) and psmisc (killall, for `mn -c`): study 003
                 #    replicated with the paper's own tool chain, Mininet + Open vSwitch (docs/mininet-003.md)
if [[ $force == 0 ]] && vagrant box list 2>/dev/null | awk -v n="$name" '$1 == n {f = 1} END {exit !f}'; then
    boxvf="${VAGRANT_HOME:-$HOME/.vagrant.d}/boxes/${name//\//-VAGRANTSLASH-}/0/libvirt/Vagrantfile"
    if grep -qx "# mpcc-box-revision: $BOX_REVISION" "$boxvf" 2>/dev/null \
       && { [[ -z "$krel" ]] || grep -qx "# mpcc-box-extra-kernel: $krel ($kver)" "$boxvf"; }; then
        log "box $name (revision $BOX_REVISION${krel:+, extra kernel $krel}) already added (use --force to rebuild)"
        exit 0
    fi
    log "box $name is older than revision $BOX_REVISION${krel:+ or lacks the extra kernel $krel}: rebuilding"
fi

# The vagrant insecure public key (vagrant swaps it for a per-machine key on first `vagrant up`).
pubkey=""
for k in /usr/share/rubygems-integration/all/gems/vagrant-*/keys/vagrant.pub /opt/vagrant/embedded/gems/gems/vagrant-*/keys/vagrant.pub \
         /usr/lib/ruby/vendor_ruby/vagrant/keys/vagrant.pub; do
    [[ -f "$k" ]] && { pubkey=$k; break; }
done
[[ -n "$pubkey" ]] || die "cannot find vagrant's insecure public key (keys/vagrant.pub)"

work=$(mktemp -d /var/tmp/mpcc-box.XXXXXX)
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# the extra kernel's packages, downloaded and checked before anything else (unpacked into the root by a hook below:
# dpkg-deb -x into a scratch directory and only its boot/ and lib/modules/KREL copied, so that the root's merged-/usr
# symlinks stay as they are; Ubuntu's packages depend on Ubuntu's linux-base, so they are not dpkg-installed)
extra_hooks=()
if [[ -n "$krel" ]]; then
    mkdir -p "$work/kdeb" "$work/kx"
    for pkg in linux-image-unsigned linux-modules linux-modules-extra; do
        f="${pkg}-${krel}_${kver}_amd64.deb"
        log "downloading $f from $UBUNTU_POOL"
        curl -fsS -m 900 -o "$work/kdeb/$f" "$UBUNTU_POOL/$f" || die "cannot download $UBUNTU_POOL/$f"
        sha=$(sha256sum "$work/kdeb/$f" | cut -d' ' -f1)
        [[ "$sha" == "${EXTRA_KERNEL_SHA256[$kver/$pkg]}" ]] || die "$f: sha256 $sha, expected ${EXTRA_KERNEL_SHA256[$kver/$pkg]}"
        dpkg-deb -x "$work/kdeb/$f" "$work/kx"
    done
    [[ -f "$work/kx/boot/vmlinuz-$krel" && -d "$work/kx/lib/modules/$krel" ]] || die "the $kver packages hold no vmlinuz-$krel or lib/modules/$krel"
    extra_hooks=(
        --customize-hook="cp -a '$work/kx/boot/.' \"\$1/boot/\"; cp -a '$work/kx/lib/modules/$krel' \"\$1/usr/lib/modules/\""
        --customize-hook="chroot \"\$1\" depmod '$krel'"
        --customize-hook="chroot \"\$1\" mkinitramfs -c gzip -o '/boot/initrd.img-$krel' '$krel'"
        --customize-hook="cp \"\$1/boot/vmlinuz-$krel\" '$work/vmlinuz-$krel'; cp \"\$1/boot/initrd.img-$krel\" '$work/initrd.img-$krel'"
    )
fi

PKGS=linux-image-amd64,linux-headers-amd64,make,initramfs-tools,systemd-sysv,udev,kmod,dbus,openssh-server,sudo,iproute2,iputils-ping,procps,netbase,iperf3,tcpdump,ethtool,jq,nftables,iptables,gawk,less,bpftool,mptcpize,mininet,openvswitch-switch,python3,psmisc
log "mmdebstrap $suite (minbase + $PKGS)"
t0=$(date +%s)
# shellcheck disable=SC2016  # $1 is expanded by mmdebstrap's hook shell (the chroot directory)
mmdebstrap --variant=minbase --include="$PKGS" \
    --customize-hook='echo mpcc-box > "$1/etc/hostname"' \
    --customize-hook='truncate -s 0 "$1/etc/machine-id"; rm -f "$1/var/lib/dbus/machine-id"' \
    --customize-hook='chroot "$1" useradd -m -s /bin/bash -G sudo vagrant' \
    --customize-hook='echo "vagrant ALL=(ALL) NOPASSWD: ALL" > "$1/etc/sudoers.d/vagrant"; chmod 0440 "$1/etc/sudoers.d/vagrant"' \
    --customize-hook='echo "vagrant:vagrant" | chroot "$1" chpasswd' \
    --customize-hook="mkdir -p \"\$1/home/vagrant/.ssh\"; cp '$pubkey' \"\$1/home/vagrant/.ssh/authorized_keys\"" \
    --customize-hook='chroot "$1" chown -R vagrant:vagrant /home/vagrant/.ssh; chmod 700 "$1/home/vagrant/.ssh"; chmod 600 "$1/home/vagrant/.ssh/authorized_keys"' \
    --customize-hook='printf "UseDNS no\nHostKey /etc/ssh/ssh_host_ed25519_key\n" > "$1/etc/ssh/sshd_config.d/mpcc.conf"' \
    --customize-hook='rm -f "$1"/etc/ssh/ssh_host_*; mkdir -p "$1/etc/systemd/system/ssh.service.d"; printf "[Service]\nExecStartPre=\nExecStartPre=/bin/sh -c \"test -f /etc/ssh/ssh_host_ed25519_key || ssh-keygen -q -t ed25519 -N \x27\x27 -f /etc/ssh/ssh_host_ed25519_key\"\nExecStartPre=/usr/sbin/sshd -t\n" > "$1/etc/systemd/system/ssh.service.d/hostkeys.conf"' \
    --customize-hook='printf "[Match]\nName=eth0\n\n[Network]\nDHCP=ipv4\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n\n[DHCPv4]\nClientIdentifier=mac\n" > "$1/etc/systemd/network/10-mgmt.network"' \
    --customize-hook='chroot "$1" systemctl enable systemd-networkd ssh; chroot "$1" systemctl set-default multi-user.target' \
    --customize-hook='printf "net.ipv6.conf.all.disable_ipv6 = 1\nnet.ipv6.conf.default.disable_ipv6 = 1\n" > "$1/etc/sysctl.d/60-mpcc-noipv6.conf"' \
    --customize-hook='printf "/dev/vda / ext4 defaults,noatime 0 1\n" > "$1/etc/fstab"' \
    --customize-hook='chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer 2>/dev/null || true' \
    --customize-hook='cp "$1"/boot/vmlinuz-* "'"$work"'/vmlinuz"; cp "$1"/boot/initrd.img-* "'"$work"'/initrd.img"' \
    "${extra_hooks[@]}" \
    --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
    ${mirror:+"--mirror=$mirror"} \
    "$suite" "$work/rootfs.tar" >&2
log "mmdebstrap took $(( $(date +%s) - t0 )) s"

mkdir "$work/root"
tar -C "$work/root" -xpf "$work/rootfs.tar"
rm -f "$work/rootfs.tar"
rm -rf "$work/kx"
truncate -s "${size_gb}G" "$work/root.raw"
mkfs.ext4 -q -F -L mpccroot -d "$work/root" "$work/root.raw" >&2
rm -rf "$work/root"
qemu-img convert -c -f raw -O qcow2 "$work/root.raw" "$work/box.img"
rm -f "$work/root.raw"
# virtual_size (GB) must not be smaller than the image, or vagrant-libvirt refuses/truncates the volume
vsize=$(qemu-img info --output=json "$work/box.img" | jq '(.["virtual-size"] + 1073741823) / 1073741824 | floor')
(( vsize >= size_gb )) || die "computed virtual_size $vsize < $size_gb"
jq -n --argjson v "$vsize" '{provider:"libvirt", format:"qcow2", virtual_size:$v}' > "$work/metadata.json"
# libvirt runs qemu as an unprivileged user that usually cannot read ~/.vagrant.d under /root: the kernel and initrd
# are also installed under /var/lib/libvirt/boot/, and the box's Vagrantfile prefers that copy.
safe="${name//\//-}"
bootdir="/var/lib/libvirt/boot/mpcc-box-$safe"
cat > "$work/Vagrantfile" <<VF
# Box-embedded defaults (mpcc Debian box): boot the kernel/initrd shipped with this box directly.
# mpcc-box-revision: $BOX_REVISION${krel:+
# mpcc-box-extra-kernel: $krel ($kver)}
Vagrant.configure("2") do |config|
  config.vm.provider :libvirt do |lv|
    dirs = ["$bootdir", File.expand_path(File.dirname(__FILE__))]
    dir = dirs.find { |d| File.exist?(File.join(d, "vmlinuz")) } || dirs.last
    lv.kernel = File.join(dir, "vmlinuz")
    lv.initrd = File.join(dir, "initrd.img")
    # mitigations=off: a testbed guest, and under TCG every mitigation (page-table isolation above all) costs
    # forwarding capacity the 20 Mbit/s multipath runs need
    lv.cmd_line = "root=/dev/vda rw console=ttyS0 net.ifnames=0 biosdevname=0 quiet mitigations=off"
    lv.disk_bus = "virtio"
  end
end
VF
mkdir -p "$bootdir"
install -m 0644 "$work/vmlinuz" "$bootdir/vmlinuz"
install -m 0644 "$work/initrd.img" "$bootdir/initrd.img"
chmod 644 "$work/vmlinuz" "$work/initrd.img"
boot_files=(vmlinuz initrd.img)
if [[ -n "$krel" ]]; then
    chmod 644 "$work/vmlinuz-$krel" "$work/initrd.img-$krel"
    boot_files+=("vmlinuz-$krel" "initrd.img-$krel")
fi
tar -C "$work" -czf "$work/box.tar.gz" metadata.json Vagrantfile box.img "${boot_files[@]}"
log "box archive $(du -h "$work/box.tar.gz" | cut -f1) (qcow2 virtual_size ${vsize} GB)"

# Re-adding a box leaves the old base volume in the libvirt pool, and vagrant-libvirt would keep cloning the STALE
# volume: remove base volumes of this box first.
vol_prefix="${name//\//-VAGRANTSLASH-}_vagrant_box_image_"
if command -v virsh >/dev/null; then
    while read -r vol; do
        [[ -n "$vol" ]] || continue
        volpath=$(virsh -c qemu:///system vol-path --pool default "$vol" 2>/dev/null || true)
        users=""
        while read -r other; do   # VM disks cloned from this base volume (qcow2 backing file)
            [[ -n "$other" && "$other" != "$volpath" ]] || continue
            [[ "$(qemu-img info -U --output=json "$other" 2>/dev/null | jq -r '.["backing-filename"] // empty')" == "$volpath" ]] && users+=" $other"
        done < <(virsh -c qemu:///system vol-list --pool default 2>/dev/null | awk 'NR>2 && NF>=2 {print $2}')
        if [[ -n "$users" ]]; then
            log "keeping base volume $vol: still the backing file of$users (destroy those VMs first)"
            continue
        fi
        log "removing stale base volume $vol from pool default"
        virsh -c qemu:///system vol-delete --pool default "$vol" >/dev/null 2>&1 || log "could not delete $vol"
    done < <(virsh -c qemu:///system vol-list --pool default 2>/dev/null | awk 'NR>2 {print $1}' | grep -F "$vol_prefix" || true)
fi
vagrant box add --force --name "$name" "$work/box.tar.gz" >&2
log "added box $name"
