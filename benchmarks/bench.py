"""Speed and determinism of the collection on this machine (issue 2's numbers). Not a test: it measures.

    .venv/bin/python benchmarks/bench.py [--skip-smoke]

- ci and smoke wall time of every paper (a forced run each, in a scratch reports folder);
- runner overhead per notebook: wall time minus the sum of papermill's cell times (kernel start, HTML export);
- a warm-cache rerun of the whole collection through the CLI (nothing changed, so nothing runs);
- byte-identical table CSVs from two runs with the same seed and profile.
Writes benchmarks/results.json and prints a markdown table for the README.
"""
import json, os, sys, time, shutil, platform, subprocess, tempfile
from pathlib import Path

from paperlib.runner import reproduce
from paperlib.collection import paper_notebooks

REPO = Path(__file__).resolve().parents[1]

def csv_bytes(d: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(d.glob("*.csv"))}

def bench_profile(profile: str, scratch: Path, papers, n_runs: int = 2) -> dict:
    out = {}
    for s in papers:
        runs = []
        for i in range(n_runs):
            t0 = time.time()
            r, = reproduce([s], profile=profile, root=REPO, reports=scratch, force=True, log=lambda *a: None)
            wall = time.time() - t0
            m = json.loads((scratch / s / "manifest.json").read_text()) if r.status == "ok" else {}
            runs.append(dict(status=r.status, wall_s=round(wall, 1), runner=m.get("runner", {}), csv=csv_bytes(scratch / s),
                             verdicts=m.get("verdicts")))
        a = runs[0]
        out[s] = dict(status=[r["status"] for r in runs], wall_s=[r["wall_s"] for r in runs],
                      cells_s=a["runner"].get("cells_s"), overhead_s=[r["runner"].get("overhead_s") for r in runs],
                      verdicts=a["verdicts"], n_csv=len(a["csv"]),
                      identical_csv=(bool(a["csv"]) and all(r["csv"] == a["csv"] for r in runs)) if n_runs > 1 else None)
        print(profile, s, out[s], flush=True)
    return out

def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("papers", nargs="*", help="slugs (default: every paper)")
    ap.add_argument("--skip-smoke", action="store_true")
    ap.add_argument("--runs", type=int, default=2, help="forced runs per paper and profile (2 checks byte-identical CSVs)")
    args = ap.parse_args()
    skip_smoke, papers = args.skip_smoke, args.papers or list(paper_notebooks(REPO))
    res = dict(machine=dict(cpus=os.cpu_count(), platform=platform.platform(), when=time.strftime("%Y-%m-%d %H:%M")))
    with tempfile.TemporaryDirectory() as d:
        res["ci"] = bench_profile("ci", Path(d) / "ci", papers, args.runs)
        if not skip_smoke: res["smoke"] = bench_profile("smoke", Path(d) / "smoke", papers, args.runs)
        # warm cache: the whole collection, through the CLI as a user runs it, after a run that filled the cache
        prof = "ci" if skip_smoke else "smoke"
        env = {**os.environ}
        reports = Path(d) / prof
        code = ("import sys, paperlib.runner as r; "
                f"sys.exit(0 if all(x.status == 'cached' for x in r.reproduce({papers!r}, profile={prof!r}, reports={str(reports)!r})) else 1)")
        t0 = time.time()
        rc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env).returncode
        res["warm_cache"] = dict(profile=prof, seconds=round(time.time() - t0, 2), all_cached=rc == 0)
    out = REPO / "benchmarks" / ("results.json" if not args.papers else f"results-{'-'.join(papers)}.json")
    out.write_text(json.dumps(res, indent=1) + "\n")
    print("\n| measure | value |\n|---|---|")
    for prof in ("ci", "smoke"):
        for s, v in res.get(prof, {}).items():
            print(f"| {s} `{prof}` wall time ({len(v['wall_s'])} runs) | {', '.join(f'{x} s' for x in v['wall_s'])} |")
            print(f"| {s} `{prof}` runner overhead | {', '.join(f'{x} s' for x in v['overhead_s'])} |")
            print(f"| {s} `{prof}` byte-identical CSVs across 2 runs | {v['identical_csv']} ({v['n_csv']} files) |")
    w = res["warm_cache"]
    print(f"| warm-cache rerun of {len(papers)} paper(s) (`{w['profile']}`) | {w['seconds']} s (all cached: {w['all_cached']}) |")

if __name__ == "__main__":
    main()
