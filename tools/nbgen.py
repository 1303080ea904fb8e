"""Write a notebook from (kind, source, *tags) cells: the shared writer of tools/make_family_notebooks.py and
tools/make_ablation_notebook.py. ``kind`` is "md" or "code"; tags go to the cell's metadata (e.g. "parameters" for
papermill, "hide-input" for the HTML report)."""
from pathlib import Path

import nbformat as nbf

#: the set-up cell's first lines: the repository on sys.path when the notebook runs from notebooks/
_PATH = '''import sys
import pathlib

REPO = pathlib.Path.cwd().resolve().parent  # notebooks/ -> repository root (works without `pip install -e .`)
if (REPO / "analysis" / "__init__.py").is_file() and str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import warnings
'''
_QUIET = '''warnings.filterwarnings("ignore", category=FutureWarning)  # library deprecation notices are not results
warnings.filterwarnings("ignore", category=DeprecationWarning)
'''


#: the set-up cell's lines that load the campaign (``campaign_dir``) and apply the ``filters`` parameter, keeping the
#: whole run listing in ``runs`` (needs load_campaign and apply_filters imported)
LOAD = '''df = load_campaign(campaign_dir, progress=False, derived_dir=derived_dir)
runs = df.attrs["runs"]
df = apply_filters(df, filters)
df.attrs["runs"] = runs'''

#: the line a one-campaign notebook prints about its data: complete runs of all, run lengths, kernels
SUMMARY = '''print(f"campaign {df['campaign'].iloc[0] if len(df) else '(no complete runs)'}: {df['run_id'].nunique()} complete runs "
      f"of {len(runs)}; run length {', '.join(f'{x:g}' for x in sorted(df['duration_s'].dropna().unique()))} s; "
      f"kernel {', '.join(sorted(df['kernel'].dropna().unique()))}")'''


def campaign_params(campaign: str, n_boot_note: str) -> str:
    """The parameters cell of a notebook of one campaign's bundle (``../data/<campaign>``): the parameters every
    report notebook takes (``mpcc reproduce`` passes them all)."""
    return f'''# Parameters (papermill overrides these; paths are relative to notebooks/)
campaign_dir = "../data/{campaign}"{" " * max(1, 14 - len(campaign))}# the ablation bundle (campaigns/{campaign}.yaml)
derived_dir = None                     # None: per-run cache in RUN_DIR/derived/; a directory for read-only campaigns
output_dir = None                      # None: write no files; else figures/ and tables/ go under it
alpha = 0.05                           # 1 - confidence level of the CIs
n_boot = 9999                          # bootstrap resamples ({n_boot_note})
filters = {{}}                           # column -> value or list of values, e.g. {{"cc": ["reno", "cubic"]}}'''


def setup(imports: str, body: str) -> str:
    """A notebook's set-up cell: the repository on sys.path, ``imports``, library warnings silenced, then ``body``."""
    return f"{_PATH}\n{imports}\n\n{_QUIET}{body}"


def write(path: Path, mpcc: dict, cells) -> None:
    """The notebook at ``path``: a python3 kernel, metadata ``mpcc`` (family, default_data, campaign), ``cells``."""
    nb = nbf.v4.new_notebook()
    nb.metadata.update({"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                        "language_info": {"name": "python"}, "mpcc": dict(mpcc)})
    out = []
    for kind, src, *tags in cells:
        c = nbf.v4.new_markdown_cell(src) if kind == "md" else nbf.v4.new_code_cell(src)
        if tags:
            c.metadata["tags"] = tags
        out.append(c)
    nb.cells = out
    nbf.write(nb, str(path))
