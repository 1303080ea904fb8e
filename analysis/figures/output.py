"""Write figures and tables as files: ``<output_dir>/figures/<name>.png`` and ``<output_dir>/tables/<name>.csv``.
With ``output_dir=None`` nothing is written (interactive use, nbval)."""
from pathlib import Path


def _dir(output_dir, sub):
    if output_dir is None or str(output_dir) == "":
        return None
    d = Path(output_dir) / sub
    d.mkdir(parents=True, exist_ok=True)
    return d


def save_figure(fig, output_dir, name: str):
    """Save ``fig`` as PNG under ``output_dir/figures``; returns the path or None."""
    d = _dir(output_dir, "figures")
    if d is None:
        return None
    path = d / f"{name}.png"
    fig.savefig(path, bbox_inches="tight")
    return path


def save_table(df, output_dir, name: str):
    """Save a DataFrame as CSV under ``output_dir/tables`` (index kept only if it is named); returns the path."""
    d = _dir(output_dir, "tables")
    if d is None:
        return None
    path = d / f"{name}.csv"
    named_index = any(n is not None for n in df.index.names)
    df.to_csv(path, index=named_index, float_format="%.6g")
    return path
