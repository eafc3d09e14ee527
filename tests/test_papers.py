"""Every paper notebook, executed end to end by papermill on the tiny real dataset its test file writes, in the `ci`
profile, two notebooks at a time with one thread each: it must succeed and keep the run contract (artefacts, valid
verdicts that respect their gates, a report that says which data it used before any result). Its run on the embedded
default is the full-profile dry run of tests/test_papers_dry.py (which `make test` runs on the other pytest worker
meanwhile), which checks the same contract: each paper runs twice in the suite, once per data path, and each run serves
two tests (issue 29: no paper run twice where once serves two tests). Whether the same seed gives the same tables
whatever the thread split is checked by `make check-determinism` (every paper, twice per profile: `DET_PROFILE=ci` for
the seconds-long version), not here."""
import json, re
from pathlib import Path

import nbformat
import pytest

from paperlib.runner import reproduce
from paperlib.collection import paper_notebooks, paper_meta
from paperlib.core import RunParams
from paperlib.datasets import dataset_folders
from conftest import check_run_contract

REPO = Path(__file__).resolve().parents[1]
PAPERS = list(paper_notebooks(REPO))

@pytest.mark.parametrize("slug", PAPERS)
def test_parameters_cell_is_the_contract(slug):
    cells = nbformat.read(REPO / "nbs" / "papers" / f"{slug}.ipynb", 4).cells
    tagged = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and tagged[0].source == RunParams().cell(), \
        f"{slug}: the parameters cell must be exactly paperlib.core.RunParams().cell()"

@pytest.mark.parametrize("slug", PAPERS)
def test_paper_run_never_rewrites_the_package(slug):
    """A paper notebook never calls nbdev_export: papermill runs it, and an export in place rewrites every module of the
    installed package while other processes (a Dask worker checking its code digest, a second notebook) read it."""
    cells = nbformat.read(REPO / "nbs" / "papers" / f"{slug}.ipynb", 4).cells
    assert not [c.source for c in cells if c.cell_type == "code" and "nbdev_export" in c.source], \
        f"{slug}: drop the nbdev_export() cell; `nbdev-export` is the developer's step, not the run's"

@pytest.mark.parametrize("slug", PAPERS)
def test_frontmatter_lists_the_dataset_folders(slug):
    """The runner fingerprints the folders the frontmatter lists: they are the folders the paper's module declares
    (`DATASETS`), each a registered dataset."""
    declared = paper_meta(REPO / "nbs" / "papers" / f"{slug}.ipynb")["datasets"]
    assert tuple(declared) == dataset_folders(slug), (dataset_folders(slug), declared)

@pytest.mark.parametrize("slug", PAPERS)
def test_repository_stands_alone(slug):
    "Nothing a reader gets cites files outside the repository."
    import re
    for p in [REPO / "nbs" / "papers" / f"{slug}.ipynb", REPO / "paperlib" / "papers" / f"{slug}.py"]:
        hits = re.findall(r"spec 6\.|spec section|spec §|DESIGN\.md|\(spec [0-9]", p.read_text())
        assert not hits, f"{p.name} cites files outside the repository: {hits[:5]}"

def _tiny_dataset_writer(slug):
    "The paper test file's `write_tiny_dataset` (None when it has none)."
    import importlib.util, sys
    p = REPO / "tests" / f"test_{slug}.py"
    if not p.exists(): return None
    sys.path.insert(0, str(REPO / "tests"))
    try:
        spec = importlib.util.spec_from_file_location(f"_tiny_{slug}", p)
        mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    finally: sys.path.pop(0)
    return getattr(mod, "write_tiny_dataset", None)

@pytest.mark.parametrize("slug", PAPERS)
def test_cache_key_follows_every_data_file(slug, tmp_path, monkeypatch):
    "Overwrite any one file of the paper's tiny real dataset with other bytes of the same size: the cache key changes."
    from paperlib.cache import cache_key
    write = _tiny_dataset_writer(slug)
    if write is None: pytest.skip(f"tests/test_{slug}.py writes no tiny dataset")
    monkeypatch.setenv("PAPERLIB_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "data"; write(data)
    nb, params = REPO / "nbs" / "papers" / f"{slug}.ipynb", dict(profile="ci", seed=0, device="cpu", data_root=str(data))
    key = cache_key(nb, params)[0]
    files = [p for p in sorted(data.rglob("*")) if p.is_file() and p.stat().st_size > 0]
    assert files and all(p.relative_to(data).parts[0] in paper_meta(nb)["datasets"] for p in files), "tiny dataset outside the declared folders"
    for p in files[:: max(1, len(files) // 8)]:                     # a spread of files: tables, images, arrays
        original = p.read_bytes()
        p.write_bytes(bytes([original[0] ^ 0xFF]) + original[1:])   # same size, other content, same second
        assert cache_key(nb, params)[0] != key, f"changing {p.relative_to(data)} left the cache key unchanged"
        p.write_bytes(original)

@pytest.fixture(scope="module")
def tiny_real_runs(tmp_path_factory):
    """Every paper with a tiny real dataset, run end to end on it in the ci profile, two papers at a time with one
    thread each (`jobs=2` gives a lone paper half the cores; one data root and one reports folder each)."""
    from concurrent.futures import ThreadPoolExecutor
    base, data = tmp_path_factory.mktemp("real"), {}
    for slug in PAPERS:                      # written here, not in the threads: the writers import test modules
        write = _tiny_dataset_writer(slug)
        if write is not None: data[slug] = base / f"data_{slug}"; write(data[slug])
    def run(slug):
        reports = base / f"reports_{slug}"
        r, = reproduce([slug], profile="ci", data_root=str(data[slug]), force=True, root=REPO, reports=reports, jobs=2, log=print)
        return slug, (reports / slug, r)
    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(run, data))

@pytest.mark.parametrize("slug", PAPERS)
def test_paper_runs_on_its_tiny_real_dataset(tiny_real_runs, slug):
    "The whole notebook, not only its loaders, runs on the tiny dataset its test file writes in the real layout."
    if slug not in tiny_real_runs: pytest.skip(f"tests/test_{slug}.py writes no tiny dataset")
    out, run = tiny_real_runs[slug]
    assert run.status == "ok", run.error
    m = json.loads((out / "manifest.json").read_text())
    assert m["data"]["kind"] == "real" and m["parameters"]["data_root"]
    check_run_contract(out, "ci", "real")
