#!/usr/bin/env bash
# qemu-system-x86_64 with a smaller TCG translation-block cache (qemu's default on 64-bit hosts is 1 GiB per VM,
# which is most of a TCG guest's host memory). host-setup.sh installs this as /usr/local/libexec/mpcc-qemu-tcg with
# TB_MB filled in; the Vagrantfile uses it when MPCC_LIBVIRT_EMULATOR points at it. KVM guests are passed through.
set -euo pipefail
TB_MB=256
QEMU=/usr/bin/qemu-system-x86_64
args=() prev=""
for a in "$@"; do
    if [[ "$prev" == -accel && "$a" == tcg* && "$a" != *tb-size=* ]]; then
        a="$a,tb-size=$TB_MB"
    elif [[ "$prev" == -machine && "$a" == *accel=tcg* ]]; then
        a=${a//,accel=tcg/}; a=${a//accel=tcg,/}
        args+=("$a" -accel "tcg,tb-size=$TB_MB")
        prev=$a
        continue
    fi
    args+=("$a")
    prev=$a
done
exec "$QEMU" "${args[@]}"
