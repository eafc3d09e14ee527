"""Every paper notebook, executed end to end by papermill in the `ci` profile, twice: it must succeed, write the
run contract's artefacts, give every claim a valid verdict, and give byte-identical tables for the same seed."""
import json
from pathlib import Path

import pytest

from paperlib.runner import reproduce, paper_notebooks
from paperlib.report import VERDICTS

REPO = Path(__file__).resolve().parents[1]
PAPERS = list(paper_notebooks(REPO))

@pytest.fixture(scope="module")
def ci_runs(tmp_path_factory):
    reports = tmp_path_factory.mktemp("reports")
    first = {r.slug: r for r in reproduce(PAPERS, profile="ci", root=REPO, reports=reports, log=print)}
    csvs = {s: {p.name: p.read_bytes() for p in (reports / s).glob("*.csv")} for s in PAPERS if (reports / s).exists()}
    second = {r.slug: r for r in reproduce(PAPERS, profile="ci", root=REPO, reports=reports, force=True, log=print)}
    return reports, first, second, csvs

@pytest.mark.parametrize("slug", PAPERS)
def test_paper_runs_in_ci_profile(ci_runs, slug):
    reports, first, second, _ = ci_runs
    assert first[slug].status == "ok", first[slug].error
    out = reports / slug
    m = json.loads((out / "manifest.json").read_text())
    assert m["profile"] == "ci" and m["data"]["kind"] in ("embedded", "real") and m["data"]["fingerprint"]
    for key in ("parameters", "provenance", "timings", "runner", "verdicts"):
        assert key in m, key
    for a in m["artefacts"]:
        assert (out / a).exists(), a
    assert any(a.endswith(".csv") for a in m["artefacts"]) and any(a.endswith(".png") for a in m["artefacts"])
    claims = json.loads((out / "claims.json").read_text())["claims"]
    assert claims, "a paper checks at least one claim"
    for c in claims:
        assert c["verdict"] in VERDICTS
        assert c["verdict"] != "not checkable" or c["reason"], c["id"]
    html = (out / "report.html").read_text()
    # results are images and DataFrame outputs (styled tables carry id="T_...", plain ones class="dataframe")
    first_result = min(i for i in (html.find("<img"), html.find('<table id="T_'), html.find('class="dataframe')) if i >= 0)
    assert 0 <= html.find("Data: ") < first_result, "the report says which data it used before any result"

@pytest.mark.parametrize("slug", PAPERS)
def test_same_seed_same_tables(ci_runs, slug):
    reports, first, second, csvs = ci_runs
    assert second[slug].status == "ok", second[slug].error
    again = {p.name: p.read_bytes() for p in (reports / slug).glob("*.csv")}
    assert again.keys() == csvs[slug].keys()
    differ = [n for n in again if again[n] != csvs[slug][n]]
    assert not differ, f"same seed, profile and machine gave different bytes in {differ}"
