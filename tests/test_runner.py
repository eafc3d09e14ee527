"The runner end to end on throw-away projects: cache, failure isolation, timeout, parallel jobs, bad input, Ctrl-C."
import json, os, re, signal, subprocess, sys, time
from pathlib import Path

import nbformat
import pytest

from paperlib import runner
from paperlib.runner import reproduce, cache_key, imported_modules, paper_notebooks, check_papers, paper_meta

quiet = lambda *a, **k: None

def run(project, names=(), **kw):
    return {r.slug: r for r in reproduce(names, root=project, reports=project / "reports", log=quiet, **kw)}

def test_papers_and_frontmatter(project):
    assert list(paper_notebooks(project)) == ["flaky", "good", "slow"]
    assert paper_meta(project / "nbs/papers/good.ipynb")["venue"] == "Test Venue 2024"
    with pytest.raises(ValueError, match="valid names: flaky, good, slow"):
        check_papers(["good", "nope"], project)

def test_bad_inputs(project):
    with pytest.raises(ValueError, match="unknown paper.*valid names"):
        run(project, ["missing"])
    with pytest.raises(ValueError, match="valid profiles: ci, smoke, full"):
        run(project, ["good"], profile="medium")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        run(project, ["good"], data_root=str(project / "no_data_here"))

def test_run_writes_report_then_cache_hits(project):
    r = run(project, ["good"])["good"]
    assert r.status == "ok", r.error
    out = project / "reports" / "good"
    for f in ["good.ipynb", "report.html", "table_1.csv", "claims.json", "manifest.json"]:
        assert (out / f).exists(), f
    m = json.loads((out / "manifest.json").read_text())
    assert m["status"] == "ok" and m["profile"] == "ci" and m["data"]["kind"] == "embedded"
    assert m["runner"]["overhead_s"] >= 0 and m["runner"]["cells_s"] > 0
    assert json.loads((out / "claims.json").read_text())["claims"][0]["verdict"] == "reproduced"
    index = (project / "reports" / "index.html").read_text()
    assert "Paper good" in index and 'href="good/report.html"' in index
    # unchanged -> cached; a markdown edit is not a code change
    nbp = project / "nbs/papers/good.ipynb"
    nb = nbformat.read(nbp, 4); nb.cells[3].source += "\nMore prose."; nbformat.write(nb, nbp)
    assert run(project, ["good"])["good"].status == "cached"
    # a new seed, a code edit or --force rerun it
    assert run(project, ["good"], seed=1)["good"].status == "ok"
    nb.cells[4].source += "\n# a code change"; nbformat.write(nb, nbp)
    assert run(project, ["good"], seed=1)["good"].status == "ok"
    assert run(project, ["good"], seed=1)["good"].status == "cached"
    assert run(project, ["good"], seed=1, force=True)["good"].status == "ok"

def test_same_seed_gives_identical_csv(project):
    run(project, ["good"])
    first = (project / "reports/good/table_1.csv").read_bytes()
    run(project, ["good"], force=True)
    assert (project / "reports/good/table_1.csv").read_bytes() == first

def test_failure_keeps_last_good_report_and_batch_goes_on(project):
    assert run(project, ["flaky"])["flaky"].status == "ok"
    good_html = (project / "reports/flaky/report.html").read_bytes()
    (project / "reports" / "FAIL").write_text("")  # FLAKY fails while <reports>/FAIL exists (out_dir is <reports>/.staging/<run>)
    runs = run(project, ["flaky", "good"], force=True)
    assert runs["flaky"].status == "failed" and "broke on purpose" in runs["flaky"].error
    assert runs["good"].status == "ok"
    assert (project / "reports/flaky/report.html").read_bytes() == good_html
    assert (project / "reports/.failed/flaky/report.html").exists()   # the failed attempt, for debugging
    status = json.loads((project / "reports/status.json").read_text())
    assert status["flaky"]["status"] == "failed"
    index = (project / "reports/index.html").read_text()
    assert "broke on purpose" in index and "showing the last good report" in index
    assert not any((project / "reports/.staging").glob("*")) if (project / "reports/.staging").exists() else True

def test_timeout_kills_the_kernel(project, monkeypatch):
    monkeypatch.setenv("PAPERLIB_TEST_SLEEP", "120")
    t0 = time.time()
    r = run(project, ["slow"], timeout=8)["slow"]
    assert r.status == "timeout" and "timed out" in r.error
    assert time.time() - t0 < 60
    assert not (project / "reports/slow").exists()
    import psutil
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if "ipykernel" in " ".join(p.info["cmdline"] or [])
                 and str(project) in " ".join(p.info["cmdline"] or [])]
    assert not leftovers

def test_parallel_jobs_divide_threads(project):
    runs = run(project, ["good", "flaky", "slow"], jobs=2)
    assert all(r.status == "ok" for r in runs.values()), {s: r.error for s, r in runs.items()}
    expected = max(1, (os.cpu_count() or 1) // 2)
    for s in runs:
        m = json.loads((project / "reports" / s / "manifest.json").read_text())
        assert m["parameters"]["threads"] == expected

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_leaves_no_half_written_report(project, sig):
    env = {**os.environ, "PAPERLIB_TEST_SLEEP": "60"}
    p = subprocess.Popen([sys.executable, "-m", "paperlib.cli", "reproduce", "slow", "--profile", "ci"], cwd=project,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    staging = project / "reports" / ".staging"
    deadline = time.time() + 60
    while time.time() < deadline and not (staging.exists() and any(d.is_dir() for d in staging.iterdir())):
        time.sleep(0.2)
    time.sleep(3)
    p.send_signal(sig)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 130, out
    assert not (project / "reports/slow").exists()
    assert not any(d.is_dir() for d in staging.iterdir())
    assert json.loads((project / "reports/status.json").read_text())["slow"]["status"] == "interrupted"
    import psutil
    assert not [q for q in psutil.process_iter(["cmdline"]) if str(project) in " ".join(q.info["cmdline"] or [])
                and "paperlib.runner" in " ".join(q.info["cmdline"] or [])], "the child runner outlived its batch"

def test_cache_key_follows_imported_library_code(tmp_path):
    pkg = tmp_path / "paperlib"; pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from paperlib.b import f\n")
    (pkg / "b.py").write_text("import numpy\n")
    (pkg / "c.py").write_text("x = 1\n")
    mods = imported_modules(["from paperlib.a import g\nimport os"], pkg)
    assert [m.name for m in mods] == ["a.py", "b.py"]

def test_html_report_is_self_contained(project):
    run(project, ["good"])
    html = (project / "reports/good/report.html").read_text()
    assert "MathJax" in html and "tex-svg" not in re.findall(r'<script src="([^"]+)"', html).__str__()
    external = re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="(https?:)?//', html)
    assert not external, external
    assert "#| export" not in html
