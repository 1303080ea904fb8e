"""Does the host that recorded a run matter? A test for a host effect within configurations, so that a campaign
recorded on several hosts (``mpcc campaign run --scheduler``, docs/multi-host.md) is audited, not assumed, to be one
sample.

Pure functions of tables: :func:`host_effect` takes one row per observation (a run's flow, path or client) with the
host that recorded it, the measured value and the block it belongs to (its configuration: every factor of the run
but the repetition, and the flow); :func:`campaign_host_effect` builds those rows from a campaign's ``load_campaign``
rows and its runs' hosts (``analysis.dataset.run_hosts``).

The test: within each block that holds runs of two or more hosts, the share of the block's variance between hosts
(eta squared, SSB / SST); the statistic is its sum over those blocks, and its null distribution comes from permuting
the host labels within each block (a stratified permutation test: the configuration is the block, so differences
between configurations never count as a host effect, and every block keeps its number of runs per host). Per block
also Welch's t test (two hosts) or Alexander-Govern's test (more; both allow unequal variances), Holm-adjusted, and
the spread of the host means in % of the block mean.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.stats.multiple import holm

# per study family's rows (analysis.families): the value compared, its unit, and the column that tells a run's
# rows apart (flow, path or client); the first whose columns a table has is used
VALUES = (("goodput_mbps", "flow", "Mbit/s"),          # 000, 004
          ("path_goodput_mbps", "path", "Mbit/s"),     # 001, 003
          ("throughput_kbps", "client", "kbit/s"))     # 002
_REP = re.compile(r"__rep\d+$")


def configuration_of(run_id: str) -> str:
    """A run's configuration: its run_id without the repetition (every family's run_id ends in ``__repNN``)."""
    return _REP.sub("", str(run_id))


@dataclass
class HostEffect:
    """The outcome of :func:`host_effect`. ``hosts``: the hosts seen; ``blocks``: blocks with an observation;
    ``mixed``: blocks with two or more hosts (the only ones that can show a host effect); ``statistic``: sum of eta
    squared over the mixed blocks; ``p_value``: of the stratified permutation test (None without a mixed block);
    ``median_spread_pct``: median over mixed blocks of (largest - smallest host mean) / block mean, %;
    ``per_block``: one row per mixed block (the block's keys, n, n_hosts, host means, spread_pct, eta_sq, test,
    statistic, p_value, p_holm); ``value``, ``unit``: what was compared."""
    hosts: list
    blocks: int
    mixed: int
    statistic: float | None
    p_value: float | None
    n_perm: int
    median_spread_pct: float | None
    per_block: pd.DataFrame = field(repr=False)
    value: str = ""
    unit: str = ""

    def line(self, alpha: float = 0.05) -> str:
        """One line of plain text for a report or the scorecard."""
        n = len(self.hosts)
        if n == 0:
            return "hosts: not recorded (meta.json without host)"
        names = ", ".join(str(h) for h in self.hosts)
        if n == 1:
            return f"hosts: one ({names}): no host effect to test"
        if self.p_value is None:
            return (f"hosts: {n} ({names}); no configuration was recorded on two hosts: a host effect cannot be "
                    f"told from the configurations")
        verdict = "differ" if self.p_value < alpha else "no evidence that they differ"
        return (f"hosts: {n} ({names}); {self.value} by host within {self.mixed} configuration(s) recorded on two or "
                f"more: {verdict} (stratified permutation test, p={self.p_value:.3g}, {self.n_perm} permutations; "
                f"host means spread by a median {self.median_spread_pct:.1f} % of the configuration's mean)")


def _eta_sq(y: np.ndarray, codes: np.ndarray, k: int) -> np.ndarray:
    """SSB / SST of ``y`` grouped by ``codes`` (0..k-1); ``codes`` may be a 2-D array of permuted labelings (one per
    row), then one value per row."""
    n = y.shape[-1]
    sst = float(((y - y.mean()) ** 2).sum())
    if sst == 0:
        return np.zeros(codes.shape[:-1]) if codes.ndim > 1 else np.float64(0.0)
    onehot = codes[..., None] == np.arange(k)             # (..., n, k)
    sums = (onehot * y[:, None]).sum(axis=-2)             # (..., k)
    counts = onehot.sum(axis=-2)
    ssb = (sums ** 2 / np.where(counts == 0, 1, counts)).sum(axis=-1) - y.sum() ** 2 / n
    return ssb / sst


def _block_test(groups: list[np.ndarray]) -> tuple[str | None, float, float]:
    from scipy import stats
    if any(len(g) < 2 for g in groups) or all(np.ptp(g) == 0 for g in groups):
        return None, float("nan"), float("nan")
    if len(groups) == 2:
        r = stats.ttest_ind(groups[0], groups[1], equal_var=False)
        return "welch", float(r.statistic), float(r.pvalue)
    r = stats.alexandergovern(*groups)
    return "alexander-govern", float(r.statistic), float(r.pvalue)


def host_effect(df: pd.DataFrame, *, value: str, block, host: str = "host", n_perm: int = 9999, seed: int = 0,
                unit: str = "") -> HostEffect:
    """Test for a host effect on ``value`` within the blocks ``block`` (a column name or a list of them) of ``df``
    (one row per observation, the recording host in column ``host``); module docstring. Rows without a host or a
    finite value are left out."""
    block = [block] if isinstance(block, str) else list(block)
    if n_perm < 99:
        raise ValueError(f"n_perm must be >= 99, got {n_perm}")
    d = df[[*block, host, value]].copy()
    d[value] = pd.to_numeric(d[value], errors="coerce")
    d = d[d[host].notna() & np.isfinite(d[value])]
    hosts = sorted(d[host].astype(str).unique().tolist())
    rng = np.random.default_rng(seed)
    rows, observed, null = [], 0.0, np.zeros(n_perm)
    groups = list(d.groupby(block, dropna=False, sort=True)) if len(d) else []
    for key, g in groups:
        hs = g[host].astype(str)
        if hs.nunique() < 2:
            continue
        names = sorted(hs.unique())
        codes = hs.map({h: i for i, h in enumerate(names)}).to_numpy()
        y = g[value].to_numpy(dtype=float)
        k = len(names)
        eta = float(_eta_sq(y, codes, k))
        perms = np.argsort(rng.random((n_perm, len(y))), axis=1)   # one permutation of the labels per row
        null += _eta_sq(y, codes[perms], k)
        observed += eta
        means = {h: float(y[codes == i].mean()) for i, h in enumerate(names)}
        mean = float(y.mean())
        test, stat, p = _block_test([y[codes == i] for i in range(k)])
        rows.append({**dict(zip(block, key if isinstance(key, tuple) else (key,))), "n": len(y), "n_hosts": k,
                     "host_means": means, "spread_pct": (max(means.values()) - min(means.values())) / mean * 100
                     if mean else float("nan"), "eta_sq": eta, "test": test, "statistic": stat, "p_value": p})
    per = pd.DataFrame(rows, columns=[*block, "n", "n_hosts", "host_means", "spread_pct", "eta_sq", "test",
                                      "statistic", "p_value"])
    ok = per["p_value"].notna()
    per["p_holm"] = np.nan
    if ok.any():
        per.loc[ok, "p_holm"] = holm(per.loc[ok, "p_value"].to_numpy())
    if rows:
        p_value = float((1 + np.sum(null >= observed - 1e-12)) / (n_perm + 1))
        spread = float(np.nanmedian(per["spread_pct"].to_numpy(dtype=float)))
    else:
        p_value = spread = None
    return HostEffect(hosts=hosts, blocks=len(groups), mixed=len(rows), statistic=observed if rows else None,
                      p_value=p_value, n_perm=n_perm, median_spread_pct=spread, per_block=per, value=value, unit=unit)


def campaign_host_effect(rows: pd.DataFrame, hosts: pd.DataFrame, *, n_perm: int = 9999,
                         seed: int = 0) -> HostEffect:
    """:func:`host_effect` of a campaign: ``rows`` from ``analysis.dataset.load_campaign`` (any study family),
    ``hosts`` a table run_id -> host (``analysis.dataset.run_hosts``). The value is the family's goodput
    (:data:`VALUES`), the block the run's configuration (:func:`configuration_of`) and its flow, path or client."""
    for value, unit_col, unit in VALUES:
        if value in rows.columns and unit_col in rows.columns:
            break
    else:
        raise ValueError(f"no goodput column among {', '.join(v for v, _, _ in VALUES)} in these rows")
    d = rows[["run_id", unit_col, value]].copy()
    d["configuration"] = d["run_id"].map(configuration_of)
    d = d.merge(hosts[["run_id", "host"]], on="run_id", how="left")
    return host_effect(d, value=value, block=["configuration", unit_col], n_perm=n_perm, seed=seed, unit=unit)
