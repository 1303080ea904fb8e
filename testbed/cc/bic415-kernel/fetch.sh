#!/usr/bin/env bash
# Obtain Linux 4.15's net/ipv4/tcp_bic.c, the native side of the bic415 port (README.md), from Ubuntu's own source
# package of the kernel study 000 ran (linux-source-4.15.0 4.15.0-54.58, the build testbed/vagrant/build-box.sh
# --extra-kernel boots), into src/tcp_bic.c. The package and the file are sha256-checked; nothing else is kept.
#
#   bash testbed/cc/bic415-kernel/fetch.sh            # downloads the package (123 MB) once per call, extracts one file
#   bash testbed/cc/bic415-kernel/fetch.sh --deb FILE # from a copy of the package already downloaded
#   MPCC_UBUNTU_POOL=URL ...                          # another mirror of Ubuntu's pool/main/l/linux
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DEB=linux-source-4.15.0_4.15.0-54.58_all.deb
DEB_SHA256=e4d60d7ae7dfa3e187ced70c732ef3485918bbf52862eb51686f5bb1769583db
INNER=./usr/src/linux-source-4.15.0/linux-source-4.15.0.tar.bz2
FILE=linux-source-4.15.0/net/ipv4/tcp_bic.c
FILE_SHA256=7782b8d85cab3ba59bb8b2dfd5b037e6ce183b65f391eae46ed1b5371cfe781d
POOL="${MPCC_UBUNTU_POOL:-http://archive.ubuntu.com/ubuntu/pool/main/l/linux}"

die() { echo "fetch.sh: $*" >&2; exit 1; }
deb=""
case "${1:-}" in
    "") ;;
    --deb) deb=${2:-}; [[ -f "$deb" ]] || die "--deb: no file '$deb'" ;;
    *) die "usage: fetch.sh [--deb linux-source-4.15.0_4.15.0-54.58_all.deb]" ;;
esac
for t in curl dpkg-deb tar bzip2 sha256sum; do command -v "$t" >/dev/null || die "$t not installed"; done
work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT
if [[ -z "$deb" ]]; then
    echo "fetch.sh: downloading $POOL/$DEB" >&2
    curl -sSfL -o "$work/$DEB" "$POOL/$DEB" || die "download of $POOL/$DEB failed"
    deb="$work/$DEB"
fi
got=$(sha256sum "$deb" | cut -d' ' -f1)
[[ $got == "$DEB_SHA256" ]] || die "$deb has sha256 $got, expected $DEB_SHA256"
dpkg-deb --fsys-tarfile "$deb" | tar -xO "$INNER" | tar -xjO "$FILE" > "$work/tcp_bic.c" \
    || die "could not extract $FILE from $deb"
got=$(sha256sum "$work/tcp_bic.c" | cut -d' ' -f1)
[[ $got == "$FILE_SHA256" ]] || die "extracted $FILE has sha256 $got, expected $FILE_SHA256"
mkdir -p "$here/src"
mv -- "$work/tcp_bic.c" "$here/src/tcp_bic.c"
echo "fetch.sh: testbed/cc/bic415-kernel/src/tcp_bic.c (Linux 4.15, Ubuntu 4.15.0-54.58; sha256 $FILE_SHA256)" >&2
