"The README's numbers are generated from benchmarks/*.json, never typed: the README equals what `make numbers` writes."
import importlib.util, json, subprocess, sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("readme_numbers", REPO / "benchmarks" / "readme_numbers.py")
rn = importlib.util.module_from_spec(spec); spec.loader.exec_module(rn)

def test_readme_numbers_are_generated():
    r = subprocess.run([sys.executable, "benchmarks/readme_numbers.py", "--check"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, "README.md differs from `make numbers`:\n" + r.stdout[-3000:]

def test_a_row_follows_its_record():
    runs = {str(s): dict(wall_s=100.0 + s, load_before=0.1, counts={"reproduced": 2, "not reproduced": 1, "inconclusive": 0,
                                                                   "not checkable": 1, "informational": 1},
                         checks={"reproduced": 1}, tested="3 of the paper's 4 claims tested on this data") for s in (0, 1, 2)}
    runs["2"]["counts"] = dict(runs["2"]["counts"], reproduced=1, inconclusive=1)
    runs["1"]["load_before"] = 3.2
    row = rn.paper_row("toy", dict(seeds=[0, 1, 2], runs=runs, moving={"C2": {}}), {"toy": 180}, {}, {"toy": "old"})
    assert row == ("| `toy` | 100 s | 101 s (load 3.2), 102 s | < 3 min | 2/1/0/1 (+1) · 2/1/0/1 (+1) · 1/1/1/1 (+1) "
                   "| 3 of the paper's 4 claims tested on this data | 1 (1 hold) | C2 | not measured | old |")
    assert rn.tally(None) == "failed" and rn.same_or_list(["1/0/0/0", "1/0/0/0"]) == "1/0/0/0 at every seed"
    diffs = {"0-1": dict(beyond=["x"], within=4), "0-2": dict(beyond=[], within=5)}
    row = rn.paper_row("toy", dict(seeds=[0, 1, 2], runs=runs, moving={}, diffs=diffs), {"toy": 180}, {}, {"toy": "old"})
    assert "| none; values beyond seed noise: 1 of 5 (0-1), 0 of 5 (0-2) |" in row

def test_a_readme_without_the_block_is_an_error():
    try: rn.render("no block here")
    except SystemExit as e: assert "generated block" in str(e)
    else: raise AssertionError("render accepted a README without its generated block")
