"""Statistics over replicate values: summaries, comparisons, equivalence, multiplicity, power."""
from analysis.stats.compare import cliffs_delta, hedges_g, kruskal, mann_whitney, welch_t
from analysis.stats.equivalence import tost
from analysis.stats.multiple import holm
from analysis.stats.power import n_for_halfwidth, power_two_sample, reps_needed
from analysis.stats.summary import median_ci, summary

__all__ = ["summary", "median_ci", "welch_t", "mann_whitney", "kruskal", "hedges_g",
           "cliffs_delta", "tost", "holm", "reps_needed", "power_two_sample", "n_for_halfwidth"]
