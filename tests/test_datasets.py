"""Every folder a paper reads is declared once and judged by `paperlib list --data-root`: the frontmatter's datasets
equal the folders registered with a layout or a reader's check, and a folder read by a paper's own reader is judged
by that reader."""
import importlib, subprocess, sys

import pytest

from paperlib.collection import paper_notebooks, paper_meta
from paperlib.data import dataset_folders, dataset_status

@pytest.mark.parametrize("slug", list(paper_notebooks()))
def test_frontmatter_datasets_are_the_registered_folders(slug):
    importlib.import_module(f"paperlib.papers.{slug}")
    assert sorted(paper_meta(paper_notebooks()[slug])["datasets"]) == sorted(dataset_folders(slug))

def test_list_judges_folders_read_by_a_papers_own_reader(tmp_path):
    importlib.import_module("paperlib.papers.supcon_strata")
    (tmp_path / "cifar-10-batches-py").mkdir()                     # present but empty: the reader says what is missing
    rows = {r["folder"]: r for r in dataset_status("supcon_strata", tmp_path)}
    assert rows["cifar-10-batches-py"]["found"] and rows["cifar-10-batches-py"]["valid"] is False
    assert "cifar-10-batches-py" in rows["cifar-10-batches-py"]["error"]
    assert rows["MNIST"]["found"] is False and rows["MNIST"]["valid"] is None
    r = subprocess.run([sys.executable, "-m", "paperlib.cli", "list", "--data-root", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    line = next(l for l in r.stdout.splitlines() if "cifar-10-batches-py/" in l)
    assert "NO" in line and "yes" in line                            # found, not valid
