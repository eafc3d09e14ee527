"""Every paper's full profile as a dry run (full-size models, tiny inputs, every loop a couple of steps), one at a
time, timed: the code a GPU user would run first, executed on this CPU.

    .venv/bin/python benchmarks/dry_run.py [papers]        # `make dry-run [PAPERS="a b"]`

Writes benchmarks/dry_run.json (status, seconds, the load average when each started, the error of a failed run) and
exits non-zero when any paper fails. The test suite runs the same for every paper, two at a time.
"""
import argparse, json, os, platform, subprocess, sys, tempfile, time
from pathlib import Path

from paperlib.runner import reproduce
from paperlib.collection import paper_notebooks

REPO = Path(__file__).resolve().parents[1]

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("papers", nargs="*", help="slugs (default: every paper)")
    args = ap.parse_args()
    papers = args.papers or list(paper_notebooks(REPO))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    out = REPO / "benchmarks" / "dry_run.json"
    rec = json.loads(out.read_text()) if out.exists() else {}
    rec.update(machine=dict(cpus=os.cpu_count(), platform=platform.platform()), papers=rec.get("papers", {}))
    with tempfile.TemporaryDirectory() as d:
        for s in papers:
            load, t0 = round(os.getloadavg()[0], 2), time.time()
            r, = reproduce([s], profile="full", dry_run=True, force=True, root=REPO, reports=Path(d), log=lambda *a: None)
            rec["papers"][s] = dict(status=r.status, seconds=round(time.time() - t0, 1), load_before=load, commit=commit,
                                    when=time.strftime("%Y-%m-%d %H:%M"), error=(r.error or "")[:300])
            print(s, r.status, rec["papers"][s]["seconds"], "s", (r.error or "")[:200], flush=True)
    out.write_text(json.dumps(rec, indent=1) + "\n")
    return 0 if all(rec["papers"][s]["status"] == "ok" for s in papers) else 1

if __name__ == "__main__":
    sys.exit(main())
