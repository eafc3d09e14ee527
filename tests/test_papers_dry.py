"""Every paper's full profile as a dry run (issue 29): full-size models and loaders, tiny inputs, every loop a couple of
steps, on the CPU, so a GPU user is not the first to execute the full profile's code. The same run is the paper's run on
its embedded default for the run contract (`check_run_contract`). Its own file so that `make test` (two pytest workers,
one file each at a time) runs these notebooks beside tests/test_papers.py's instead of after them."""
import json
from pathlib import Path

import pytest

from paperlib.runner import reproduce
from paperlib.collection import paper_notebooks
from conftest import check_run_contract

REPO = Path(__file__).resolve().parents[1]
PAPERS = list(paper_notebooks(REPO))

# the two longest dry runs first (51 s and 67 s one at a time on 2 idle cores; the others 11-55 s), so the two workers end together
DRY_FIRST = ("defect_tdist", "medical_sr_gan")

@pytest.fixture(scope="module")
def dry_runs(tmp_path_factory):
    "Every paper's full profile as a dry run (full-size models, tiny inputs, every loop a couple of steps), two at a time."
    reports = tmp_path_factory.mktemp("reports_dry")
    papers = [s for s in DRY_FIRST if s in PAPERS] + [s for s in PAPERS if s not in DRY_FIRST]
    return reports / "dry-run", {r.slug: r for r in reproduce(papers, profile="full", dry_run=True, jobs=2, root=REPO,
                                                               reports=reports, log=print)}

@pytest.mark.parametrize("slug", PAPERS)
def test_full_profile_dry_run(dry_runs, slug):
    """Issue 29: the full profile's code runs end to end on the CPU before a GPU user meets it. Every size a paper uses
    comes from ctx.sizes (ctx.pick refuses a dry run), and the plan table shows the dry values beside the paper's."""
    reports, runs = dry_runs
    assert runs[slug].status == "ok", runs[slug].error
    m = json.loads((reports / slug / "manifest.json").read_text())
    assert m["profile"] == "full" and m["dry_run"] is True
    plan = (reports / slug / "plan_vs_this_profile.csv").read_text()
    assert "a dry run: the loop runs a couple of steps" in plan, "no declared size has a dry value: nothing was shrunk"

@pytest.mark.parametrize("slug", PAPERS)
def test_dry_run_keeps_the_run_contract(dry_runs, slug):
    """The run contract on the embedded default (artefacts, verdicts that respect their gates, a first screen that names
    the data, no code noise): the dry run serves this test too, so no paper runs a third time (issue 29)."""
    reports, runs = dry_runs
    assert runs[slug].status == "ok", runs[slug].error
    check_run_contract(reports / slug, "full", "embedded")
