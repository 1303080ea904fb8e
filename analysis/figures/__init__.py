"""Figures and tables for the notebooks: per-configuration means with 95 % CIs, the paper's values drawn beside
ours, the ``ss`` cwnd samples behind Figure 2, and writing figures/tables as files.

Modules (one job each):
* :mod:`analysis.figures.summarise` - mean and bootstrap CI per group of replicate runs; paper-vs-ours tables.
* :mod:`analysis.figures.style` - the seaborn style, fixed colours/markers per congestion control.
* :mod:`analysis.figures.plots` - line/bar plots with CI error bars and the paper's values as hollow markers.
* :mod:`analysis.figures.ss_samples` - parse ``ss -ti`` samples (cwnd, RTT, MSS) and pick the data connection.
* :mod:`analysis.figures.output` - save figures (PNG) and tables (CSV) under an output directory.
* :mod:`analysis.figures.coverage` - which runs of an experiment are complete / skipped / incomplete.
* :mod:`analysis.figures.readable` - tables and labels in words with units, numbers in fixed notation.
"""
from analysis.figures.coverage import apply_filters, experiment_rows, run_coverage
from analysis.figures.output import save_figure, save_table
from analysis.figures.plots import band_panels, bar_ci, legend_outside, line_ci, lines_band
from analysis.figures.readable import label, readable
from analysis.figures.ss_samples import bdp_packets, cwnd_series, data_connection, parse_ss, ss_path
from analysis.figures.style import CC_ORDER, cc_palette, set_style
from analysis.figures.summarise import describe_differences, mean_ci, paper_vs_ours

__all__ = ["apply_filters", "experiment_rows", "run_coverage", "save_figure", "save_table", "bar_ci", "legend_outside",
           "line_ci", "lines_band", "band_panels", "label", "readable", "bdp_packets", "cwnd_series", "data_connection", "parse_ss", "ss_path",
           "CC_ORDER", "cc_palette", "set_style", "mean_ci", "paper_vs_ours", "describe_differences"]
