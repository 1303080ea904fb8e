#!/usr/bin/env bash
# Build Linux 4.15's tcp_bic.c (src/tcp_bic.c, from fetch.sh) as the module tcp_bic415.ko for the running kernel, in
# the Debian 12 VM (6.1), registering the congestion control "bic415": the native side that testbed/cc/bic415.bpf.c
# is validated against (README.md, testbed/cc/validate-vm.sh --ccs bic415).
#
#   bash testbed/cc/bic415-kernel/build.sh [OUTDIR]   # default OUTDIR: testbed/cc/bic415-kernel/build (replaced)
#   bash testbed/cc/bic415-kernel/build.sh --check    # only check that src/tcp_bic.c is there with its sha256
#   KDIR=/path/to/kernel/build bash ...               # another kernel build tree (default: the running kernel's)
#
# One edit, checked to change exactly one line: the registered name "bic" becomes "bic415", so the 6.1 kernel's own
# tcp_bic and the port bic415 are never confused with it. Nothing the algorithm computes is touched.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src="$here/src/tcp_bic.c"
want=7782b8d85cab3ba59bb8b2dfd5b037e6ce183b65f391eae46ed1b5371cfe781d   # 4.15's net/ipv4/tcp_bic.c (fetch.sh)

[[ -f $src ]] || { echo "build.sh: testbed/cc/bic415-kernel/src/tcp_bic.c is missing: run testbed/cc/bic415-kernel/fetch.sh" >&2; exit 1; }
got=$(sha256sum "$src" | cut -d' ' -f1)
[[ $got == "$want" ]] || { echo "build.sh: testbed/cc/bic415-kernel/src/tcp_bic.c has sha256 $got, expected $want (fetch.sh)" >&2; exit 1; }
[[ ${1:-} != --check ]] || exit 0

out=${1:-$here/build}
kdir=${KDIR:-/lib/modules/$(uname -r)/build}
rm -rf -- "$out"
mkdir -p -- "$out/src"
sed 's/^\t\.name\t\t= "bic",$/\t.name\t\t= "bic415",/' "$src" > "$out/src/tcp_bic415.c"
n=$(diff "$src" "$out/src/tcp_bic415.c" | grep -c '^>' || true)
[[ $n -eq 1 ]] || { echo "build.sh: renaming the congestion control changed $n lines, expected 1" >&2; exit 1; }
echo 'obj-m := tcp_bic415.o' > "$out/src/Kbuild"
make -C "$kdir" M="$(cd "$out/src" && pwd)" modules
echo "built $out/src/tcp_bic415.ko: insmod it to register the congestion control \"bic415\""
