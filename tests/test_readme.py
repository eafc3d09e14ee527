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

ic_spec = importlib.util.spec_from_file_location("inconclusive_causes", REPO / "benchmarks" / "inconclusive_causes.py")
ic = importlib.util.module_from_spec(ic_spec); ic_spec.loader.exec_module(ic)

def test_an_inconclusive_verdict_is_put_behind_the_gate_that_failed():
    run = dict(verdicts={"C1": "inconclusive", "C2": "inconclusive", "C3": "reproduced", "K1": "inconclusive"},
               kinds={"C1": "effect", "C2": "effect", "C3": "effect", "K1": "check"},
               gates={"learned": False, "sanity": True})
    claims = dict(claims=[dict(id="C1", gates=["sanity", "learned"]), dict(id="C2", gates=["sanity"]), dict(id="C3", gates=["learned"])],
                  gates=[dict(id="learned", kind="learned"), dict(id="sanity", kind="sanity")])
    got = ic.causes(dict(runs={"0": run}), claims)["0"]
    assert [(c["claim"], c["failed"], c["kinds"]) for c in got] == [("C1", ["learned"], ["learned"]), ("C2", [], [])]
    # a record that lists its own claims' gates is read before any report's
    got = ic.causes(dict(runs={"0": dict(run, claim_gates={"C1": [], "C2": ["learned"]})}), claims)["0"]
    assert [(c["claim"], c["failed"]) for c in got] == [("C1", []), ("C2", ["learned"])]
