"""How long the docs site takes to build with every paper's report present (issue 3: under 60 s on 2 cores).

    .venv/bin/python benchmarks/bench_site.py [--reports DIR] [--repeat 3]

Without --reports, every paper is first run in the ci profile into a scratch reports folder (not timed), so that
each paper has its executed report. Then `paperlib site` is timed as a user runs it: a fresh process each time,
imports included, building into a scratch folder. Writes benchmarks/site.json and prints a line for the README.
"""
import argparse, json, os, platform, shutil, statistics, subprocess, sys, tempfile, time
from pathlib import Path

from paperlib.runner import reproduce
from paperlib.collection import paper_notebooks

REPO = Path(__file__).resolve().parents[1]

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reports", help="a reports folder that already holds every paper's report")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="paperlib-bench-site-"))
    try:
        reports = Path(args.reports) if args.reports else scratch / "reports"
        if not args.reports:
            runs = reproduce([], profile="ci", root=REPO, reports=reports, log=lambda *a: None)
            print("reports:", ", ".join(f"{r.slug} {r.status}" for r in runs), flush=True)
        papers = list(paper_notebooks(REPO))
        present = [s for s in papers if (reports / s / "report.html").exists()]
        cli = [str(Path(sys.executable).parent / "paperlib"), "site", "--out", str(scratch / "_site"), "--reports", str(reports)]
        times = []
        for i in range(args.repeat):
            t0 = time.perf_counter()
            subprocess.run(cli, check=True, cwd=REPO, capture_output=True)
            times.append(round(time.perf_counter() - t0, 2))
            print(f"build {i + 1}: {times[-1]:.1f} s", flush=True)
        site = scratch / "_site"
        res = dict(machine=dict(cpus=os.cpu_count(), platform=platform.platform(), when=time.strftime("%Y-%m-%d %H:%M")),
                   papers=len(papers), reports_present=len(present), pages=len(list(site.rglob("*.html"))),
                   site_mb=round(sum(p.stat().st_size for p in site.rglob("*") if p.is_file()) / 2**20, 1),
                   build_s=times, median_s=statistics.median(times))
        (REPO / "benchmarks" / "site.json").write_text(json.dumps(res, indent=1) + "\n")
        print(json.dumps(res, indent=1))
        print(f"\n| docs site build (`paperlib site`, {len(present)}/{len(papers)} reports, {res['pages']} pages, "
              f"{os.cpu_count()} cores) | median {res['median_s']:.1f} s of {len(times)} (max {max(times):.1f} s) |")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

if __name__ == "__main__":
    main()
