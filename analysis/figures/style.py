"""One look for every figure: seaborn "whitegrid", and a fixed colour and marker per congestion control so that
Reno/BIC/CUBIC/BBR look the same in every notebook (the paper draws one line per algorithm)."""
import matplotlib
import seaborn as sns

#: Order in which the paper lists the algorithms; others (e.g. "udp") follow.
CC_ORDER = ["reno", "bic", "cubic", "bbr"]
_COLOURS = dict(zip(CC_ORDER + ["udp"], sns.color_palette("colorblind", 5)))
MARKERS = {"reno": "o", "bic": "s", "cubic": "^", "bbr": "D", "udp": "v"}


def cc_palette(names=None) -> dict:
    """Colour per cc name (unknown names get the next colours of the "colorblind" palette)."""
    names = list(names) if names is not None else CC_ORDER
    extra = [n for n in names if n not in _COLOURS]
    pal = dict(_COLOURS)
    spare = sns.color_palette("colorblind", 10)[5:]
    pal.update({n: spare[i % len(spare)] for i, n in enumerate(extra)})
    return {n: pal[n] for n in names}


def order(names) -> list:
    """Names sorted in the paper's order (reno, bic, cubic, bbr), unknown names after them alphabetically."""
    names = [n for n in dict.fromkeys(names) if n is not None]
    return [n for n in CC_ORDER if n in names] + sorted(n for n in names if n not in CC_ORDER)


def set_style():
    """Apply the notebooks' style (whitegrid, paper context, 100 dpi inline figures)."""
    sns.set_theme(style="whitegrid", context="notebook", palette="colorblind")
    matplotlib.rcParams.update({"figure.dpi": 100, "savefig.dpi": 150, "figure.figsize": (7.0, 4.2),
                                "axes.titlesize": 11, "legend.fontsize": 9})
