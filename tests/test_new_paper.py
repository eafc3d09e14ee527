"""Paper 16's front door: `paperlib new` writes a paper from the template that runs at once, is picked up by the
runner, `paperlib list` and the site, and comes with a real-data test skeleton that passes."""
import json, re, sys
from pathlib import Path

import nbformat

from conftest import BIN, in_copy
from paperlib.core import RunParams

def paperlib(root, *args):
    return in_copy(root, BIN / "python", "-m", "paperlib.cli", *args)

def test_new_paper_files(scratch_repo):
    nb = nbformat.read(scratch_repo / "nbs/papers/demo_paper.ipynb", 4)
    front = nb.cells[0].source
    assert 'title: "A Demo Paper"' in front and 'venue: "Demo Venue 2024"' in front and 'datasets: "demo_paper"' in front
    assert not re.search(r"\{\{(title|venue|authors|description|slug)\}\}", json.dumps(nb.dict()))   # every placeholder filled
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1 and params[0].source == RunParams().cell()
    assert (scratch_repo / "paperlib/papers/demo_paper.py").exists()   # exported at once
    assert (scratch_repo / "tests/test_demo_paper.py").exists()

def test_new_paper_runs_in_ci_profile(scratch_repo):
    reports = scratch_repo / "reports"
    m = json.loads((reports / "demo_paper/manifest.json").read_text())
    assert m["status"] == "ok" and m["profile"] == "ci" and m["data"]["kind"] == "embedded"
    claims = json.loads((reports / "demo_paper/claims.json").read_text())
    assert [g["id"] for g in claims["gates"]] == ["learned"] and claims["claims"][0]["gates"] == ["learned"]
    assert {"table_1.csv", "fig_1.png", "plan_vs_this_profile.csv"} <= set(m["artefacts"])
    assert "A Demo Paper" in (reports / "index.html").read_text()

def test_generated_test_file_passes(scratch_repo):
    r = in_copy(scratch_repo, BIN / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_demo_paper.py")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "6 passed" in r.stdout, r.stdout[-500:]

def test_new_refuses_to_overwrite_and_bad_slugs(scratch_repo):
    before = (scratch_repo / "nbs/papers/demo_paper.ipynb").read_bytes()
    r = paperlib(scratch_repo, "new", "demo_paper", "--title", "Again", "--venue", "V")
    assert r.returncode == 2 and "never overwrites" in r.stderr
    assert (scratch_repo / "nbs/papers/demo_paper.ipynb").read_bytes() == before
    r = paperlib(scratch_repo, "new", "Bad-Slug", "--title", "T", "--venue", "V")
    assert r.returncode == 2 and "lower-case letters" in r.stderr

def tiny(root, data_root, breakage=None):
    "Write the generated test file's tiny dataset under `data_root` (and break it), in the copy's environment."
    code = ("import sys; from pathlib import Path; sys.path.insert(0, 'tests'); import test_demo_paper as t; "
            f"d = Path({str(data_root)!r}); t.write_tiny_dataset(d)" + (f"; t.BREAKAGES[{breakage}][1](d)" if breakage is not None else ""))
    r = in_copy(root, BIN / "python", "-c", code)
    assert r.returncode == 0, r.stderr

def test_list_shows_datasets_under_a_data_root(scratch_repo, tmp_path):
    r = paperlib(scratch_repo, "list", "--data-root", tmp_path)
    assert r.returncode == 0 and "demo_paper" in r.stdout
    line = next(l for l in r.stdout.splitlines() if l.startswith("demo_paper") and "demo_paper/" in l)
    assert line.split()[2] == "no", line
    tiny(scratch_repo, tmp_path)
    r = paperlib(scratch_repo, "list", "--data-root", tmp_path)
    line = next(l for l in r.stdout.splitlines() if l.startswith("demo_paper") and "demo_paper/" in l)
    assert line.split()[2:4] == ["yes", "yes"], line
    tiny(scratch_repo, tmp_path, breakage=0)
    r = paperlib(scratch_repo, "list", "--data-root", tmp_path)
    line = next(l for l in r.stdout.splitlines() if l.startswith("demo_paper") and "demo_paper/" in l)
    assert line.split()[2:4] == ["yes", "NO"] and "samples.csv" in line, line

def test_new_paper_reads_real_data(scratch_repo, tmp_path):
    tiny(scratch_repo, tmp_path)
    reports = tmp_path / "reports"
    r = in_copy(scratch_repo, BIN / "python", "-c",
                "import sys; from pathlib import Path; from paperlib.runner import reproduce; "
                f"r = reproduce(['demo_paper'], profile='ci', data_root={str(tmp_path)!r}, reports=Path({str(reports)!r}), log=print); "
                "sys.exit(0 if r[0].status == 'ok' else 1)")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    m = json.loads((reports / "demo_paper/manifest.json").read_text())
    assert m["data"]["kind"] == "real" and m["data"]["params"]["rows"] == 3

def test_a_data_root_without_the_papers_folder_is_said_aloud(scratch_repo, tmp_path):
    "Given a data root that holds none of its folders, the paper runs on its embedded default and the batch summary "
    "and the report's first screen say so, naming the folder it looked for."
    (tmp_path / "data").mkdir(); reports = tmp_path / "reports"
    r = in_copy(scratch_repo, BIN / "python", "-c",
                "from pathlib import Path; from paperlib.runner import reproduce, summary; "
                f"print(summary(reproduce(['demo_paper'], profile='ci', data_root={str(tmp_path / 'data')!r}, "
                f"reports=Path({str(reports)!r}), log=lambda m: None)))")
    said = f"demo_paper: the data root {tmp_path / 'data'} was given, but the run used its embedded default: none of demo_paper/ is there"
    assert said in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
    assert "none of demo_paper/ is there" in (reports / "demo_paper/report.html").read_text()

def test_full_profile_dry_run(scratch_repo):
    """`--profile full --dry-run` runs the full profile's code with every declared size at its dry value, into
    reports/dry-run/, and says on the first screen that its verdicts mean nothing; other profiles are refused."""
    r = paperlib(scratch_repo, "reproduce", "demo_paper", "--profile", "full", "--dry-run")
    assert r.returncode == 0, r.stdout + r.stderr
    out = scratch_repo / "reports" / "dry-run" / "demo_paper"
    m = json.loads((out / "manifest.json").read_text())
    assert m["dry_run"] is True and m["profile"] == "full"
    assert "A full-profile dry run" in (out / "report.html").read_text()
    plan = (out / "plan_vs_this_profile.csv").read_text()
    assert "samples,6000,60," in plan                       # the dry value of n, beside the paper's 6000
    assert not (scratch_repo / "reports" / "dry-run" / "demo_paper").samefile(scratch_repo / "reports" / "demo_paper")
    r = paperlib(scratch_repo, "reproduce", "demo_paper", "--profile", "smoke", "--dry-run")
    assert r.returncode == 2 and "give --profile full" in r.stderr
