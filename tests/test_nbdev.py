"nbdev hygiene: the package is what the notebooks export, the notebooks are clean, and their inline tests pass."
import os, shutil, subprocess, sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

def _copy(tmp_path):
    dst = tmp_path / "repo"
    shutil.copytree(REPO, dst, ignore=shutil.ignore_patterns(".venv", ".git", "reports", "_docs", "__pycache__", "*.egg-info", ".pytest_cache"))
    return dst

def _snapshot(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for d in ("nbs", "paperlib") for p in (root / d).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}

def test_export_and_clean_leave_no_diff(tmp_path):
    root = _copy(tmp_path)
    before = _snapshot(root)
    for cmd in ("nbdev-export", "nbdev-clean"):
        r = subprocess.run([str(BIN / cmd)], cwd=root, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    after = _snapshot(root)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"run nbdev-export and nbdev-clean, then commit: {changed}"

def test_parameters_tag_survives_clean():
    import json
    for nb in (REPO / "nbs" / "papers").glob("*.ipynb"):
        cells = json.loads(nb.read_text())["cells"]
        tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(tagged) == 1, f"{nb.name}: papermill needs exactly one cell tagged 'parameters'"

def test_library_notebooks_pass_their_own_tests(tmp_path):
    """In a copy: every library notebook ends by exporting the library (`nbdev_export()`), and in place that would rewrite
    paperlib/*.py under the paper notebooks the other pytest worker is running (one read a half-written plots.py).
    Paper notebooks carry `skip_exec: true`: papermill runs them (tests/test_papers.py), nbdev-test does not."""
    root = _copy(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(root)}      # the copy's paperlib, not the installed (editable) one
    r = subprocess.run([str(BIN / "nbdev-test"), "--n-workers", "2"], cwd=root, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
