"Shared fixtures: throw-away paperlib projects whose paper notebooks are tiny and fast."
import json, os, shutil, subprocess, sys
from pathlib import Path

import nbformat
import pytest

from paperlib.core import RunParams

@pytest.fixture(scope="session", autouse=True)
def one_compute_thread_per_worker():
    """One torch/BLAS thread in each pytest process, the thread policy RunContext.create gives a notebook: two workers
    on two cores, each with torch's two spinning OpenMP threads, made a 30-step toy training take 20 s instead of 3 on
    a busy machine. Subprocesses (kernels, nbdev-test, Dask workers) keep their own policies."""
    if "torch" in sys.modules:           # the test modules, all collected by now, brought it in
        from paperlib.core import set_pool_threads
        set_pool_threads(1)
    yield

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

PARAMS = RunParams().cell()

# `make test` runs two pytest workers, each taking a whole file at a time (pytest-xdist's loadfile) in collection
# order: the longest files first, so that the papers' notebooks start at once and the two workers end together
LONGEST_FIRST = ("test_papers_dry.py", "test_papers.py", "test_cluster.py", "test_runner.py")

def pytest_collection_modifyitems(items):
    rank = lambda item: LONGEST_FIRST.index(item.path.name) if item.path.name in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=rank)     # stable: the order within a file and among the other files is pytest's

def paper_nb(slug: str, body: str, title: str = None, data: str = "embedded_source('Toy', 'toy data', {'n': 5})") -> nbformat.NotebookNode:
    "A minimal paper notebook that follows the run contract: frontmatter, parameters, RunContext, Report."
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_raw_cell(f"---\ntitle: {title or 'Paper ' + slug}\nvenue: Test Venue 2024\nskip_exec: true\n---"),
        nbformat.v4.new_code_cell(PARAMS, metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            "from pathlib import Path\nimport pandas as pd\n"
            "from paperlib.core import RunContext\nfrom paperlib.report import Report\nfrom paperlib.data import embedded_source\n"
            f"ctx = RunContext.create({slug!r}, profile, seed, device, data_root, out_dir, threads, blind)\n"
            f"rep = Report(ctx, 'T', 'V')\nrep.data_source({data})"),
        nbformat.v4.new_markdown_cell("Some prose about the method, $a^2 + b^2 = c^2$."),
        nbformat.v4.new_code_cell(body),
        nbformat.v4.new_code_cell("rep.finish()"),
    ]
    return nb

GOOD = ("x = ctx.rng(1).normal(size=50)\n"
        "rep.table(pd.DataFrame({'mean': [x.mean()], 'sd': [x.std()]}), 'Table 1')\n"
        "rep.claim('C1', 'the mean is small', '|mean| < 1', bool(abs(x.mean()) < 1), source='ours', kind='effect', ours=x.mean())")

FLAKY = ("import os\n"
         "if (Path(ctx.out_dir).parents[1] / 'FAIL').exists() or os.environ.get('PAPERLIB_TEST_FAIL'): "
         "raise RuntimeError('the experiment broke on purpose')\n" + GOOD)

SLOW = "import time\ntime.sleep(float(os.environ.get('PAPERLIB_TEST_SLEEP', '0')) if (os := __import__('os')) else 0)\n" + GOOD

def make_project(root: Path, papers: dict) -> Path:
    "A project folder at `root` with the paper notebooks `papers` {slug: body}."
    (root / "nbs" / "papers").mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "settings.ini").write_text("[run]\nprofile = ci\nreports = reports\ntimeout = 300\njobs = 1\nseed = 0\n")
    for slug, body in papers.items():
        nbformat.write(paper_nb(slug, body), root / "nbs" / "papers" / f"{slug}.ipynb")
    return root

@pytest.fixture
def project(tmp_path):
    "A project folder with three papers: good, flaky (fails when <reports>/FAIL exists) and slow."
    return make_project(tmp_path / "proj", {"good": GOOD, "flaky": FLAKY, "slow": SLOW})

def copy_repo(dst: Path) -> Path:
    "A copy of this checkout's sources (no venv, no git, no reports) to change freely."
    shutil.copytree(REPO, dst, ignore=shutil.ignore_patterns(".venv", ".git", "reports", "_docs", "_site*", "__pycache__",
                                                             "*.egg-info", ".pytest_cache", "artifacts"))
    (dst / "reports").mkdir(exist_ok=True)
    return dst

def in_copy(root: Path, *args, **kw) -> subprocess.CompletedProcess:
    "Run `args` with the copy's own paperlib first on the path."
    env = {**os.environ, "PYTHONPATH": str(root), **kw.pop("env", {})}
    return subprocess.run([str(a) for a in args], cwd=root, env=env, capture_output=True, text=True, **kw)

@pytest.fixture(scope="session")
def scratch_repo(tmp_path_factory):
    """A copy of the repo in which `paperlib new demo_paper` wrote a paper from the template, beside a paper that
    never ran and one whose run fails; demo_paper and the broken paper have been run in the ci profile."""
    root = copy_repo(tmp_path_factory.mktemp("scratch") / "repo")
    for slug in [p.stem for p in (root / "nbs" / "papers").glob("*.ipynb") if not p.stem.startswith("_")]:
        (root / "nbs" / "papers" / f"{slug}.ipynb").unlink()
        (root / "tests" / f"test_{slug}.py").unlink(missing_ok=True)
    r = in_copy(root, BIN / "python", "-m", "paperlib.cli", "new", "demo_paper", "--title", "A Demo Paper",
                "--venue", "Demo Venue 2024", "--authors", "A. Author, B. Author", "--description", "The template, as paperlib new writes it.")
    assert r.returncode == 0, r.stdout + r.stderr
    nbformat.write(paper_nb("never_run", GOOD, title="A Paper Never Run"), root / "nbs" / "papers" / "never_run.ipynb")
    nbformat.write(paper_nb("broken", "raise RuntimeError('the experiment broke on purpose')", title="A Broken Paper"),
                   root / "nbs" / "papers" / "broken.ipynb")
    r = in_copy(root, BIN / "python", "-m", "paperlib.cli", "reproduce", "demo_paper", "broken", "--profile", "ci")
    assert r.returncode == 1, r.stdout + r.stderr      # broken fails on purpose; demo_paper must not
    status = json.loads((root / "reports" / "status.json").read_text())
    assert status["demo_paper"]["status"] == "ok", r.stdout + r.stderr
    assert status["broken"]["status"] == "failed"
    return root

NOISE = ("PosixPath(", "Claim(", "Gate(", "site-packages", ".staging")

def check_run_contract(out: Path, profile: str, data_kind: str) -> None:
    """A paper's run folder `out` keeps the run contract: the manifest's keys and artefacts, every claim a valid verdict
    that respects its gates, effects and checks counted apart, and a report whose first screen names the data and the
    verdicts before any result and whose outputs carry no code noise (issue 30). The same whatever the profile, so one
    run of a paper serves this test and its own (the dry run, the tiny real run)."""
    import re
    from paperlib.report import VERDICTS, INFORMATIONAL
    m = json.loads((out / "manifest.json").read_text())
    assert m["profile"] == profile and m["data"]["kind"] == data_kind and m["data"]["fingerprint"]
    for key in ("parameters", "provenance", "timings", "runner", "verdicts", "gates"):
        assert key in m, key
    for a in m["artefacts"]:
        assert (out / a).exists(), a
    assert any(a.endswith(".csv") for a in m["artefacts"]) and any(a.endswith(".png") for a in m["artefacts"])
    saved = json.loads((out / "claims.json").read_text())
    claims, gates = saved["claims"], {g["id"]: g for g in saved["gates"]}
    assert [c for c in claims if c["verdict"] != INFORMATIONAL], "a paper checks at least one claim"
    for c in claims:
        assert c["verdict"] in VERDICTS and c["rule_source"] in ("paper", "ours"), c["id"]
        assert c["verdict"] != "not checkable" or c["reason"], c["id"]
        assert set(c["gates"]) <= set(gates), c["id"]
        if any(gates[g]["passed"] is not True for g in c["gates"]) and c["verdict"] in ("reproduced", "not reproduced"):
            pytest.fail(f"{c['id']} counts as {c['verdict']} although a gate it depends on did not hold")
    # the paper's effects are counted; checks of our implementation are counted apart (issue 27)
    assert sum(saved["counts"][v] for v in VERDICTS) == sum(c["kind"] == "effect" for c in claims)
    assert sum(saved["checks"][v] for v in VERDICTS) == sum(c["kind"] == "check" for c in claims)
    html = (out / "report.html").read_text()
    body = html[html.index("<body"):]
    # results are images and tables; the first screen names the data and the verdicts before any of them
    first_result = min(i for i in (body.find("<img"), body.find('<table id="T_'), body.find('class="dataframe')) if i >= 0)
    assert 0 <= body.find("Data: ") < first_result, "the report says which data it used before any result"
    assert 0 <= body.find("claims tested on this data") < first_result
    # only outputs are scanned for noise: the code a reader opens may name these things
    outputs = " ".join(re.findall(r'<div class="jp-OutputArea.*?(?=<div class="jp-Cell |\Z)', html, re.S))
    found = {w: outputs.count(w) for w in NOISE if w in outputs}
    assert not found, f"code noise in the report's outputs: {found}"

def foreground():
    """`preexec_fn` for a child that a test will Ctrl-C: SIGINT at its default, as in a foreground command. A suite
    started in the background (`make test &`, nohup, some CI runners) hands its children SIGINT *ignored*, and Python
    keeps it ignored, so the child would rightly never see the signal."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)
