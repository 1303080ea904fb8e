"""The analysis environment a report records (mpcc/report_env.py): the lock's pins against what is installed."""
from pathlib import Path

from mpcc import report_env

REPO = Path(__file__).resolve().parents[1]


def test_lock_pins_parse_pip_compile_output(tmp_path):
    lock = tmp_path / "requirements.lock"
    lock.write_text("# header\nNumPy==2.4.6 \\\n    --hash=sha256:00\n    # via pandas\npython_dateutil==2.9.0 ; "
                    "python_version >= '3'\n-c other.lock\n")
    assert report_env.lock_pins(lock) == {"numpy": "2.4.6", "python-dateutil": "2.9.0"}


def test_environment_against_a_lock(tmp_path):
    have = report_env.installed()
    (tmp_path / "requirements.lock").write_text(f"numpy=={have['numpy']}\npandas==0.0.1\n")
    env = report_env.environment(tmp_path)
    assert env["pinned"] == 2 and set(env["differs"]) == {"pandas"}
    assert env["differs"]["pandas"] == {"lock": "0.0.1", "installed": have["pandas"]}
    text = report_env.describe(env)
    assert text.startswith("Python ") and "NOT the pinned environment: 1 of 2 packages differ" in text
    (tmp_path / "requirements.lock").write_text(f"numpy=={have['numpy']}\n")
    assert "all 1 packages at the versions requirements.lock pins" in report_env.describe(report_env.environment(tmp_path))
    assert "versions not pinned" in report_env.describe(report_env.environment(tmp_path / "none"))


def test_the_committed_lock_pins_every_dependency_with_hashes():
    text = (REPO / "requirements.lock").read_text()
    pins = report_env.lock_pins(REPO / "requirements.lock")
    for dep in ("numpy", "scipy", "pandas", "pyarrow", "dpkt", "seaborn", "matplotlib", "papermill", "nbformat",
                "nbconvert", "ipykernel", "pytest", "nbval", "numba", "setuptools"):
        assert dep in pins, dep
    assert text.count("--hash=sha256:") >= len(pins)
    assert "/work" not in text and "/tmp" not in text
    assert not [ln for ln in text.splitlines() if ln.startswith(("--find-links", "--index-url", "-c /"))]


def test_environment_yml_and_lab_lock_pin_the_same_versions():
    """environment.yml installs requirements-lab.lock, which holds every pin of requirements.lock unchanged plus
    JupyterLab: conda users and the Makefile's .venv get the same versions of the design card's packages."""
    import yaml

    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip_lines = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert pip_lines == ["-r requirements-lab.lock"]
    base = report_env.lock_pins(REPO / "requirements.lock")
    lab = report_env.lock_pins(REPO / "requirements-lab.lock")
    assert {k: lab.get(k) for k in base} == base
    for pkg in ("jupyterlab", "papermill", "numpy", "scipy", "pandas", "seaborn", "dpkt", "nbval"):
        assert pkg in lab, pkg
