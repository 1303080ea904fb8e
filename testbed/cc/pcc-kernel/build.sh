#!/usr/bin/env bash
# Build PCC-Kernel's vivace module (tcp_pcc.ko, congestion control "pcc") for the running kernel, in the Debian 12 VM
# (README.md). This repository does not ship the module's source: src/tcp_pcc.c must be the file README.md names,
# obtained by the user; its sha256 is checked first.
#
#   bash testbed/cc/pcc-kernel/build.sh [OUTDIR]     # default OUTDIR: testbed/cc/pcc-kernel/build (replaced)
#   bash testbed/cc/pcc-kernel/build.sh --check      # only check that src/tcp_pcc.c is there with its sha256
#   KDIR=/path/to/kernel/build bash ...              # another kernel build tree (default: the running kernel's)
#
# The build works on a copy in OUTDIR: src/tcp_pcc.c, the edits of patches/series applied (.patch: patch -p1;
# .sed: a sed script that must change exactly one line), and a one-line kbuild file of this repository
# (obj-m := tcp_pcc.o); then insmod OUTDIR/src/tcp_pcc.ko.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src="$here/src/tcp_pcc.c"
want=fb044cd55c1da95e08365610f8264955871c7f6b6599f585975b8ce6ad37d12b   # PCC-Kernel src/tcp_pcc.c at ed39d0f0

if [[ ! -f $src ]]; then
	echo "build.sh: testbed/cc/pcc-kernel/src/tcp_pcc.c is missing: obtain it as testbed/cc/pcc-kernel/README.md says" >&2
	exit 1
fi
got=$(sha256sum "$src" | cut -d' ' -f1)
if [[ $got != "$want" ]]; then
	echo "build.sh: testbed/cc/pcc-kernel/src/tcp_pcc.c has sha256 $got, expected $want (testbed/cc/pcc-kernel/README.md)" >&2
	exit 1
fi
[[ ${1:-} != --check ]] || exit 0

out=${1:-$here/build}
kdir=${KDIR:-/lib/modules/$(uname -r)/build}
rm -rf -- "$out"
mkdir -p -- "$out/src"
cp -- "$src" "$out/src/tcp_pcc.c"
while read -r p; do
	[[ -z $p || $p == \#* ]] && continue
	case $p in
	*.sed)
		cp -- "$out/src/tcp_pcc.c" "$out/src/tcp_pcc.c.orig"
		sed -i -f "$here/patches/$p" "$out/src/tcp_pcc.c"
		n=$(diff "$out/src/tcp_pcc.c.orig" "$out/src/tcp_pcc.c" | grep -c '^>' || true)
		rm -f -- "$out/src/tcp_pcc.c.orig"
		if [[ $n -ne 1 ]]; then
			echo "build.sh: patches/$p changed $n lines of src/tcp_pcc.c, expected 1" >&2
			exit 1
		fi
		echo "applied patches/$p (1 line)" ;;
	*) patch -d "$out" -p1 --forward < "$here/patches/$p" ;;
	esac
done < "$here/patches/series"
echo 'obj-m := tcp_pcc.o' > "$out/src/Kbuild"
make -C "$kdir" M="$(cd "$out/src" && pwd)" modules
echo "built $out/src/tcp_pcc.ko: insmod it to register the congestion control \"pcc\""
