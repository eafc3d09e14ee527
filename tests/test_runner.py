"""The runner end to end on throw-away projects: cache, failure isolation, timeout, parallel jobs, two batches on one
reports folder, signals, whole error messages, no HTML from data, bad input."""
import json, os, re, shutil, signal, subprocess, sys, tempfile, threading, time
from pathlib import Path

import nbformat
import pytest

from conftest import paper_nb, make_project, GOOD, FLAKY, SLOW, BIN, foreground
from paperlib.runner import reproduce
from paperlib.job import KERNEL_PREFIX
from paperlib.collection import paper_notebooks, check_papers, paper_meta
from paperlib.core import RunParams

quiet = lambda *a, **k: None

def run(project, names=(), **kw):
    return {r.slug: r for r in reproduce(names, root=project, reports=project / "reports", log=quiet, **kw)}

def cli(project, *args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "paperlib.cli", *args], cwd=project, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, **kw)

@pytest.fixture(scope="module")
def good_report(tmp_path_factory):
    """The `project` fixture's three papers after one ci run of `good` at seed 0: read by the tests that only read a
    report, copied by those that go on from there (each paper run starts a kernel; this one is shared)."""
    project = make_project(tmp_path_factory.mktemp("shared") / "proj", {"good": GOOD, "flaky": FLAKY, "slow": SLOW})
    r = run(project, ["good"])["good"]
    assert r.status == "ok", r.error
    return project

def copy_of(project: Path, dst: Path) -> Path:
    "A copy of a project with its reports, to change freely."
    return Path(shutil.copytree(project, dst))

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
    with pytest.raises(ValueError, match="jobs: 0 must be at least 1"):
        run(project, ["good"], jobs=0)
    with pytest.raises(ValueError, match="timeout: 0 must be greater than 0"):
        run(project, ["good"], timeout=0)
    with pytest.raises(TypeError, match="unknown run parameter"):
        run(project, ["good"], profle="ci")

def test_settings_errors_name_the_file_and_key(project):
    ini = project / "settings.ini"
    for text, msg in [("[run]\njobs = two\n", "settings.ini [run] jobs: 'two' is not a whole number"),
                      ("[run]\ntimeout = 0\n", "settings.ini [run] timeout: '0' must be greater than 0"),
                      ("jobs = 1\n[run\n", "settings.ini: not a valid settings file")]:
        ini.write_text(text)
        r = cli(project, "reproduce", "good")
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, r.stderr
    ini.write_text("[run]\nprofile = ci\ntimeout = 120.5\n")
    assert cli(project, "reproduce", "good").returncode == 0

def test_run_writes_report_then_cache_hits(good_report, tmp_path):
    out = good_report / "reports" / "good"
    for f in ["good.ipynb", "report.html", "table_1.csv", "claims.json", "manifest.json"]:
        assert (out / f).exists(), f
    m = json.loads((out / "manifest.json").read_text())
    assert m["status"] == "ok" and m["profile"] == "ci" and m["data"]["kind"] == "embedded"
    assert m["runner"]["overhead_s"] >= 0 and m["runner"]["cells_s"] > 0
    assert json.loads((out / "claims.json").read_text())["claims"][0]["verdict"] == "reproduced"
    index = (good_report / "reports" / "index.html").read_text()
    assert "Paper good" in index and 'href="good/report.html"' in index
    project = copy_of(good_report, tmp_path / "proj")
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

def test_report_reads_like_a_paper_page(good_report):
    html = (good_report / "reports/good/report.html").read_text()
    body = html[html.index("<body"):]
    # the first screen: title, venue, data banner and verdicts, before any cell
    i_title, i_data, i_verd, i_cells = (body.index("Paper good"), body.index("Data: embedded default"),
                                        body.index("claims tested on this data"), body.index('class="jp-Notebook"'))
    assert i_title < i_data < i_cells and i_verd < i_cells
    assert "skip_exec" not in body                     # no raw frontmatter blob
    text = re.sub(r"<[^>]+>", "", body)
    assert ".staging" not in text and "threads = None" not in text and "Parameters" not in text   # no parameters cells
    assert "fastcore" not in body and "#| " not in body

def test_kernel_folders_are_removed(project, monkeypatch):
    before = set(Path(tempfile.gettempdir()).glob(f"{KERNEL_PREFIX}*"))
    run(project, ["good"])
    monkeypatch.setenv("PAPERLIB_TEST_SLEEP", "60")
    assert run(project, ["slow"], timeout=6)["slow"].status == "timeout"    # killed: the parent removes its folder
    # a folder left behind is one whose process is gone (other runs on this machine may hold live ones)
    import psutil
    left = [d for d in set(Path(tempfile.gettempdir()).glob(f"{KERNEL_PREFIX}*")) - before
            if not psutil.pid_exists(int(d.name[len(KERNEL_PREFIX):].split("-")[0]))]
    assert not left, left

def test_same_seed_gives_identical_csv(good_report, tmp_path):
    first = (good_report / "reports/good/table_1.csv").read_bytes()
    project = copy_of(good_report, tmp_path / "proj")
    r = run(project, ["good"], force=True)["good"]
    assert r.status == "ok", r.error                  # a failed rerun would leave the copied table in place
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

def test_whole_error_message_is_kept(tmp_path):
    msg = "x.csv, row 3 (image_id '5'), column 'class_id': 'abc' is not a valid int\nsee the layout of x.csv"
    body = f"from paperlib.data import DataError\nraise DataError({msg!r})"
    proj = make_project(tmp_path / "p", {"bad": body})
    r = cli(proj, "reproduce", "bad")
    assert r.returncode == 1
    status = json.loads((proj / "reports/status.json").read_text())["bad"]
    assert status["error"].startswith("DataError: x.csv, row 3 (image_id '5'), column 'class_id'"), status["error"]
    assert "see the layout of x.csv" in status["error"]                    # not cut to its last line
    assert r.stdout.count("is not a valid int") == 2, r.stdout            # once in the progress line, once in the summary
    assert "[bad] error:" not in r.stdout                                  # not doubled by the child
    err = (proj / "reports/.failed/bad/error.txt").read_text()
    assert err.startswith("DataError: x.csv") and "raise DataError" in err, err
    index = (proj / "reports/index.html").read_text()
    assert "column &#x27;class_id&#x27;" in index and "see the layout" not in index   # first line in the table

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

def test_two_batches_on_one_reports_folder(good_report, tmp_path, monkeypatch):
    "A cached no-op batch running beside a real one must not touch the real one's files."
    project = copy_of(good_report, tmp_path / "proj")
    monkeypatch.setenv("PAPERLIB_TEST_SLEEP", "6")
    results = {}
    t = threading.Thread(target=lambda: results.update(run(project, ["slow"], force=True)))
    t.start()
    time.sleep(3)
    for _ in range(3): assert run(project, ["good"])["good"].status == "cached"
    t.join(120)
    assert results["slow"].status == "ok", results["slow"].error

def test_orphan_staging_is_cleaned(project):
    dead = 2 ** 22 - 7           # a pid no process has here
    orphan = project / "reports" / ".staging" / f"good-{dead}-123"
    orphan.mkdir(parents=True); (orphan.parent / f"{orphan.name}.json").write_text("{}")
    mine = project / "reports" / ".staging" / f"good-{os.getpid()}-456"; mine.mkdir()
    run(project, ["good"])
    assert not orphan.exists() and not (orphan.parent / f"{orphan.name}.json").exists()
    assert mine.exists()          # a live batch's folder is not touched

@pytest.mark.parametrize("sig,word", [(signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")])
def test_signals_leave_no_half_written_report(project, sig, word):
    env = {**os.environ, "PAPERLIB_TEST_SLEEP": "60"}
    p = subprocess.Popen([sys.executable, "-m", "paperlib.cli", "reproduce", "slow", "--profile", "ci"], cwd=project,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=foreground)
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
    status = json.loads((project / "reports/status.json").read_text())["slow"]
    assert status["status"] == "interrupted"
    assert (word if sig != signal.SIGINT else "Ctrl-C") in status["error"], status["error"]
    import psutil
    assert not [q for q in psutil.process_iter(["cmdline"]) if str(project) in " ".join(q.info["cmdline"] or [])
                and "paperlib.job" in " ".join(q.info["cmdline"] or [])], "the child runner outlived its batch"

def test_data_never_becomes_html(tmp_path):
    "Values and names from data reach report.html and the index as text, never as elements."
    evil = "<img src=x onerror=alert(1)>"
    body = (f"evil = {evil!r}\n"
            "df = pd.DataFrame({evil: [evil, 1.5]}, index=[evil, 'b'])\n"
            "rep.table(df, 'Table 1', f'consumer {evil} in a caption, $p < 0.05$')\n"
            "rep.table(df, 'Table 2', index=True)\n"
            "rep.note(f'a note about {evil}')\n"
            "rep.gate('learned', f'gate on {evil}', 'r', True, kind='learned', ours={evil: 1})\n"
            "rep.claim('C1', f'claim on {evil}', f'rule {evil}', True, source='ours', kind='effect', gates=['learned'], ours={evil: 0.5}, paper=evil)")
    proj = make_project(tmp_path / "p", {"evil": body})
    nb = nbformat.read(proj / "nbs/papers/evil.ipynb", 4)
    nb.cells[2].source = nb.cells[2].source.replace("embedded_source('Toy', 'toy data', {'n': 5})",
                                                    f"embedded_source('Toy {evil}', 'toy {evil}', {{'n': 5}})")
    nbformat.write(nb, proj / "nbs/papers/evil.ipynb")
    assert run(proj, ["evil"])["evil"].status == "ok"
    for f in [proj / "reports/evil/report.html", proj / "reports/index.html"]:
        text = f.read_text()
        assert "<img src=x" not in text, f
    assert "&lt;img src=x onerror=alert(1)&gt;" in (proj / "reports/evil/report.html").read_text()

def test_cache_key_follows_dataset_content(tmp_path):
    "A paper's cache key covers the content of the dataset folders its frontmatter lists, and no other."
    proj = make_project(tmp_path / "p", {"good": GOOD})
    nb = nbformat.read(proj / "nbs/papers/good.ipynb", 4)
    nb.cells[0].source = nb.cells[0].source.replace("skip_exec", "datasets: bfw\nskip_exec")
    nbformat.write(nb, proj / "nbs/papers/good.ipynb")
    data = tmp_path / "data"; (data / "bfw").mkdir(parents=True); (data / "other").mkdir()
    (data / "bfw" / "embeddings.npy").write_bytes(b"1" * 64)
    assert run(proj, ["good"], data_root=str(data))["good"].status == "ok"
    (data / "other" / "x.csv").write_text("unrelated")
    assert run(proj, ["good"], data_root=str(data))["good"].status == "cached"
    (data / "bfw" / "embeddings.npy").write_bytes(b"2" * 64)          # same shape, other values
    assert run(proj, ["good"], data_root=str(data))["good"].status == "ok"

def test_html_report_is_self_contained(good_report):
    html = (good_report / "reports/good/report.html").read_text()
    assert "MathJax" in html and "tex-svg" not in re.findall(r'<script src="([^"]+)"', html).__str__()
    external = re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="(https?:)?//', html)
    assert not external, external
    assert "#| export" not in html

def test_parameters_contract(project):
    "Each notebook's parameters cell is RunParams().cell(): one definition of the run parameters."
    for nb in paper_notebooks(project).values():
        cell = next(c for c in nbformat.read(nb, 4).cells if "parameters" in c.metadata.get("tags", []))
        assert cell.source == RunParams().cell()

LEAKY = GOOD + "\nprint('LE' + 'AK', round(float(x.mean()), 6))"     # the word appears only when printed

def test_calibration_run_is_blinded_and_kept_apart(tmp_path):
    """Issue 28: `--calibrate` runs on a calibration seed into reports/calibration/, shows the data and the plan, and
    records every claim as blinded: no outcome in claims.json, the report, the executed notebook or the index."""
    project = make_project(tmp_path / "proj", {"good": LEAKY})
    assert run(project, ["good"])["good"].status == "ok"                      # an evaluation report exists
    before = (project / "reports/good/claims.json").read_text()
    r = cli(project, "reproduce", "good", "--calibrate")
    assert r.returncode == 0, r.stdout + r.stderr
    out = project / "reports" / "calibration" / "good"
    claims = json.loads((out / "claims.json").read_text())
    assert claims["blind"] is True and [c["verdict"] for c in claims["claims"]] == ["blinded"]
    assert claims["claims"][0]["ours"] is None and claims["claims"][0]["outcome"] is None
    m = json.loads((out / "manifest.json").read_text())
    assert m["seed"] == 1_000_000 and m["blind"] is True
    assert not (out / "table_1.csv").exists()                                  # a table of results is not written
    nb = (out / "good.ipynb").read_text()
    assert "LEAK" not in nb and "Data: embedded default" in nb                 # printed numbers withheld, data shown
    html = (out / "report.html").read_text()
    assert "LEAK" not in html and "blinded" in html
    assert (project / "reports/good/claims.json").read_text() == before        # the evaluation report is untouched
    assert "calibration" not in (project / "reports/index.html").read_text()
    # seeds: a calibration run takes a calibration seed, an evaluation run never does
    r = cli(project, "reproduce", "good", "--calibrate", "--seed", "3")
    assert r.returncode == 2 and "seed 3 is an evaluation seed" in r.stderr, r.stderr
    r = cli(project, "reproduce", "good", "--seed", "1000001")
    assert r.returncode == 2 and "is a calibration seed" in r.stderr, r.stderr

def test_calibration_of_a_notebook_that_ignores_blind_fails(tmp_path):
    "A notebook that does not pass `blind` to RunContext.create cannot run a calibration: it would show its outcomes."
    project = make_project(tmp_path / "proj", {"good": GOOD})
    nbp = project / "nbs/papers/good.ipynb"
    nb = nbformat.read(nbp, 4)
    nb.cells[2].source = nb.cells[2].source.replace("threads, blind)", "threads)")
    nbformat.write(nb, nbp)
    r = run(project, ["good"], blind=True)["good"]
    # its RunContext sees a calibration seed without blind=True and refuses to run
    assert r.status == "failed" and "is a calibration seed" in r.error, r.error
    failed = project / "reports" / "calibration" / ".failed" / "good"
    assert "reproduced" not in (failed / "good.ipynb").read_text()            # its outputs were withheld all the same

def test_runs_are_kept_apart_per_profile_and_seed(project):
    """Every good run is kept under reports/runs/<slug>/<profile>-seed<seed>/; reports/<slug>/ shows the latest one,
    except that a ci run never replaces a smoke report; going back to a kept run is a cache hit that shows it again."""
    reports = project / "reports"
    shown = lambda: json.loads((reports / "good/manifest.json").read_text())
    assert run(project, ["good"], profile="smoke")["good"].status == "ok"
    assert (reports / "runs/good/smoke-seed0/report.html").exists() and shown()["profile"] == "smoke"
    assert run(project, ["good"], profile="ci")["good"].status == "ok"
    assert (reports / "runs/good/ci-seed0/report.html").exists()
    assert shown()["profile"] == "smoke"                               # the ci run did not replace the smoke report
    assert "say nothing about the paper" in (reports / "runs/good/ci-seed0/report.html").read_text()
    assert "say nothing about the paper" not in (reports / "good/report.html").read_text()
    assert run(project, ["good"], profile="smoke", seed=1)["good"].status == "ok"
    assert shown()["parameters"]["seed"] == 1
    assert run(project, ["good"], profile="smoke")["good"].status == "cached"
    assert shown()["parameters"]["seed"] == 0                          # the kept seed-0 run is shown again
    index = (reports / "index.html").read_text()
    for tag in ("ci-seed0", "smoke-seed0", "smoke-seed1"): assert f'href="runs/good/{tag}/report.html"' in index
    # the shown report is its own folder: a later run of the same profile and seed does not change it under a reader
    before = (reports / "good/report.html").read_text()
    assert run(project, ["good"], profile="smoke", seed=1, force=True)["good"].status == "ok"
    assert (reports / "runs/good/smoke-seed0/report.html").read_text() == before

GRID = ("import os\n"
        "def train(method, rep_seed):\n"
        "    if (method, rep_seed) == ('b', 1) and (Path(ctx.out_dir).parents[1] / 'KILL').exists():\n"
        "        (Path(ctx.out_dir).parents[1] / 'KILL').unlink(); os._exit(9)   # the machine goes away mid-grid\n"
        "    (Path(ctx.out_dir).parents[1] / 'calls.txt').open('a').write(f'{method}{rep_seed}\\n')\n"
        "    return float(ctx.rng(0).normal() + __import__('numpy').random.normal())\n"
        "R = ctx.grid(train, dict(method=['a', 'b'], rep_seed=[0, 1]))\n"
        "rep.table(pd.DataFrame([dict(method=m, seed=s, score=v) for (m, s), v in R.items()]), 'Table 1')\n"
        "rep.claim('C1', 'scores are finite', 'all finite', all(abs(v) < 1e9 for v in R.values()), source='ours', kind='effect')")

def test_a_run_killed_mid_grid_resumes_where_it_stopped(tmp_path):
    """A paper's ctx.grid keeps finished cells until the run succeeds: killed mid-grid, the rerun computes only the rest.
    One thread (`jobs=2` for a lone paper), so the cells run in order and which ones finished before the kill is known;
    with two workers the kill also takes down the other worker's cell half-way, at a moment the test cannot fix."""
    project = make_project(tmp_path / "proj", {"grid": GRID})
    reports = project / "reports"; reports.mkdir()
    (reports / "KILL").write_text("")
    assert run(project, ["grid"], jobs=2)["grid"].status == "failed"
    assert sorted((reports / "calls.txt").read_text().split()) == ["a0", "a1", "b0"]
    assert run(project, ["grid"], jobs=2)["grid"].status == "ok"
    assert sorted((reports / "calls.txt").read_text().split()) == ["a0", "a1", "b0", "b1"]   # only b1 ran again
    assert not (reports / ".resume").exists() or not any((reports / ".resume").iterdir())  # cleared after success
    resumed = (reports / "grid" / "table_1.csv").read_text()
    clean = make_project(tmp_path / "clean", {"grid": GRID})
    assert run(clean, ["grid"], jobs=2)["grid"].status == "ok"
    assert (clean / "reports" / "grid" / "table_1.csv").read_text() == resumed      # the same numbers as a run never killed
