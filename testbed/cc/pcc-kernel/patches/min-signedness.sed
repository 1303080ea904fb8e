# Forced-by: the signedness check of min() (upstream "minmax: allow min()/max()/clamp() if the arguments have the
# same signedness", Linux 6.7), which Debian's 6.1.0-56 headers carry: "min(extra_rate, pcc->rate / 2) signedness
# error" (the VM's build log, 2026-11-26). extra_rate is a u32 and pcc->rate an s64; the module's kernels compared them
# as C does, in s64 (a u32 converts to s64 without change), and min_t(s64, ...) compares in s64 too: the same value.
# The value is computed and never used (the next line's "pcc->rate / 2; //extra_rate;").
# One line changes; build.sh refuses an edit that changes none.
s|^\(\t*extra_rate = \)min(extra_rate, pcc->rate / 2);$|\1min_t(s64, extra_rate, pcc->rate / 2);|
