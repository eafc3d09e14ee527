"""Same seed, same profile, same machine: byte-identical tables. Runs every paper twice (forced) and compares the
bytes of every table CSV. `make check-determinism`; the test suite checks only the cheapest paper.

    .venv/bin/python benchmarks/determinism.py [papers] [--profile ci|smoke]

Writes benchmarks/determinism.json and exits non-zero when any paper's tables differ or a run fails.
"""
import argparse, json, os, platform, sys, tempfile, time
from pathlib import Path

from paperlib.runner import reproduce
from paperlib.collection import paper_notebooks

REPO = Path(__file__).resolve().parents[1]

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("papers", nargs="*", help="slugs (default: every paper)")
    ap.add_argument("--profile", default="ci")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    papers = args.papers or list(paper_notebooks(REPO))
    res = dict(machine=dict(cpus=os.cpu_count(), platform=platform.platform(), when=time.strftime("%Y-%m-%d %H:%M")),
               profile=args.profile, papers={})
    with tempfile.TemporaryDirectory() as d:
        tables = []
        for attempt in range(2):
            reports = Path(d) / f"run{attempt}"
            runs = {r.slug: r for r in reproduce(papers, profile=args.profile, jobs=args.jobs, force=True, root=REPO,
                                                 reports=reports, log=lambda *a: None)}
            tables.append({s: ({p.name: p.read_bytes() for p in sorted((reports / s).glob("*.csv"))}
                               if runs[s].status == "ok" else None) for s in papers})
            for s in papers:
                if runs[s].status != "ok": res["papers"].setdefault(s, {})["error"] = runs[s].error
        for s in papers:
            a, b = tables[0][s], tables[1][s]
            entry = res["papers"].setdefault(s, {})
            entry.update(ok=a is not None and b is not None, n_csv=len(a or {}),
                         differ=sorted(n for n in (a or {}) if (b or {}).get(n) != a[n]) if a and b else None)
            print(s, entry, flush=True)
    (REPO / "benchmarks" / "determinism.json").write_text(json.dumps(res, indent=1) + "\n")
    bad = [s for s, e in res["papers"].items() if not e["ok"] or e["differ"]]
    print("byte-identical:", "all papers" if not bad else f"NOT for {', '.join(bad)}")
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main())
