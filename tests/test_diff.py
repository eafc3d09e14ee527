"""`paperlib diff` from the command line: a changed verdict sets the exit status, a value shifted by 5 noise units is
flagged and one shifted by 0.1 is not, and bad input is one clear line."""
import json, subprocess, sys
from pathlib import Path

import numpy as np

def write_run(d: Path, paper: str, verdicts: dict, values: dict):
    d.mkdir(parents=True)
    (d / "claims.json").write_text(json.dumps(dict(paper=paper, claims=[dict(id=k, verdict=v) for k, v in verdicts.items()])))
    (d / "values.json").write_text(json.dumps({k: dict(name=k, value=float(np.mean(r)), per_replicate=[float(x) for x in r])
                                               for k, r in values.items()}))

def diff(*args):
    return subprocess.run([sys.executable, "-m", "paperlib.cli", "diff", *map(str, args)], capture_output=True, text=True)

def test_diff_flags_noise_units_and_verdicts(tmp_path):
    noise = np.random.default_rng(1).normal(0, 1, 5)
    se = float(np.sqrt(2 * noise.var(ddof=1) / 5))
    write_run(tmp_path / "a", "p", {"C1": "reproduced"}, dict(big=10 + noise, small=3 + noise))
    write_run(tmp_path / "b", "p", {"C1": "reproduced"}, dict(big=10 + noise + 5 * se, small=3 + noise + 0.1 * se))
    r = diff(tmp_path / "a", tmp_path / "b", "--json")
    assert r.returncode == 0, r.stderr                                   # no verdict changed
    beyond = {v["name"]: v["beyond"] for v in json.loads(r.stdout)[0]["values"]}
    assert beyond == {"big": True, "small": False}
    write_run(tmp_path / "c", "p", {"C1": "not reproduced"}, dict(big=10 + noise, small=3 + noise))
    r = diff(tmp_path / "a", tmp_path / "c")
    assert r.returncode == 1 and "verdict C1: reproduced -> not reproduced" in r.stdout, r.stdout
    r = diff(tmp_path / "a", tmp_path / "nowhere")
    assert r.returncode == 2 and "nowhere: not a folder" in r.stderr and len(r.stderr.strip().splitlines()) == 1
