"""One look for every figure: seaborn "whitegrid", and a fixed colour and marker per congestion control so that
Reno/BIC/CUBIC/BBR look the same in every notebook (the paper draws one line per algorithm)."""
import matplotlib
import seaborn as sns

#: Order in which the paper lists the algorithms; others (e.g. "udp") follow.
CC_ORDER = ["reno", "bic", "cubic", "bbr"]
#: the other studies' congestion controls and modes keep one colour each too (colorblind palette, colours 6-10)
OTHER_CCS = ["pcc_vivace", "westwood", "tcp_path1", "mptcp", "westwood_e"]
_COLOURS = dict(zip(CC_ORDER + ["udp"] + OTHER_CCS, sns.color_palette("colorblind", 10)))
#: the colorblind palette has 10 colours, all taken: pcc_vivace_usp (the Vivace paper / PCC-Uspace controller,
#: docs/pcc-vivace.md) gets the "dark" palette's brown, a darker sibling of pcc_vivace's (the port of the module)
_COLOURS["pcc_vivace_usp"] = sns.color_palette("dark", 10)[5]
#: bic415 (BIC as study 000's Linux 4.15 computes it, docs/kernel-415.md): a darker sibling of bic's orange,
#: and an octagon beside bic's square
_COLOURS["bic415"] = sns.color_palette("dark", 10)[1]
MARKERS = {"reno": "o", "bic": "s", "bic415": "8", "cubic": "^", "bbr": "D", "udp": "v", "pcc_vivace": "P", "pcc_vivace_usp": "p",
           "westwood": "X", "westwood_e": "*"}


def cc_palette(names=None) -> dict:
    """Colour per cc name, the same in every notebook (other names, e.g. a mode with its scheduler, get colours of
    the "tab10" palette in the order given)."""
    names = list(names) if names is not None else CC_ORDER
    extra = [n for n in names if n not in _COLOURS]
    pal = dict(_COLOURS)
    tab = sns.color_palette("tab10", 10)
    spare = [tab[i] for i in (8, 9, 4, 5, 6, 7, 0, 1, 2, 3)]   # olive, cyan, ... first: unlike reno/bic/cubic/bbr
    pal.update({n: spare[i % len(spare)] for i, n in enumerate(extra)})
    return {n: pal[n] for n in names}


def has_colour(name) -> bool:
    """True when ``name`` (a cc, "udp", or a study's mode such as "mptcp") has its own fixed colour."""
    return name in _COLOURS


def order(names) -> list:
    """Names sorted in the paper's order (reno, bic, cubic, bbr), unknown names after them alphabetically."""
    names = [n for n in dict.fromkeys(names) if n is not None]
    return [n for n in CC_ORDER if n in names] + sorted(n for n in names if n not in CC_ORDER)


def set_style(tables: bool = False):
    """Apply the notebooks' style (whitegrid, paper context, 100 dpi inline figures); with ``tables`` also the
    notebooks' pandas display options (3 digits, up to 40 columns and 300 rows, text shown whole, 200 characters)."""
    if tables:
        import pandas as pd
        for k, v in (("display.precision", 3), ("display.max_columns", 40), ("display.max_rows", 300),
                     ("display.max_colwidth", None), ("display.width", 200)):
            pd.set_option(k, v)
    sns.set_theme(style="whitegrid", context="notebook", palette="colorblind")
    matplotlib.rcParams.update({"figure.dpi": 100, "savefig.dpi": 150, "figure.figsize": (7.0, 4.2),
                                "axes.titlesize": 11, "legend.fontsize": 9})
