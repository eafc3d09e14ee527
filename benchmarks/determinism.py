"""Same seed, any thread split: byte-identical tables and the same verdicts. Runs every paper twice (forced):
once one notebook at a time with every core's thread (`--jobs 1`), once two at a time with one thread each
(`--jobs 2`, a loaded machine), and compares the bytes of every table CSV, the verdicts and the gates.
`make check-determinism` (smoke; `DET_PROFILE=ci` for the seconds-long version, the one the test suite ran before
issue 29 moved it here to keep the suite within 15 minutes).

    .venv/bin/python benchmarks/determinism.py [papers] [--profile smoke|ci] [--seed N]

Writes benchmarks/determinism.json and exits non-zero when any paper's tables or verdicts differ or a run fails.
"""
import argparse, json, os, platform, sys, tempfile, time
from pathlib import Path

from paperlib.runner import reproduce
from paperlib.collection import paper_notebooks

REPO = Path(__file__).resolve().parents[1]
SPLITS = (1, 2)     # --jobs: one notebook with every core's thread, then two notebooks of one thread each

def outcome(folder: Path) -> dict:
    "A finished run's tables (bytes), verdicts and gates."
    saved = json.loads((folder / "claims.json").read_text())
    return dict(tables={p.name: p.read_bytes() for p in sorted(folder.glob("*.csv"))},
                verdicts={c["id"]: c["verdict"] for c in saved["claims"]},
                gates={g["id"]: g["passed"] for g in saved["gates"]})

def compare(a: dict, b: dict) -> dict:
    return dict(n_csv=len(a["tables"]), differ=sorted(n for n in a["tables"] if b["tables"].get(n) != a["tables"][n]),
                verdicts={k: [v, b["verdicts"].get(k)] for k, v in a["verdicts"].items() if b["verdicts"].get(k) != v},
                gates={k: [v, b["gates"].get(k)] for k, v in a["gates"].items() if b["gates"].get(k) != v})

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("papers", nargs="*", help="slugs (default: every paper)")
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    papers = args.papers or list(paper_notebooks(REPO))
    res = dict(machine=dict(cpus=os.cpu_count(), platform=platform.platform(), when=time.strftime("%Y-%m-%d %H:%M")),
               profile=args.profile, seed=args.seed, splits=[f"--jobs {j}" for j in SPLITS], papers={})
    with tempfile.TemporaryDirectory() as d:
        found = []
        for jobs in SPLITS:
            reports = Path(d) / f"jobs{jobs}"
            runs = {r.slug: r for r in reproduce(papers, profile=args.profile, seed=args.seed, jobs=jobs, force=True,
                                                 root=REPO, reports=reports, log=lambda *a: None)}
            found.append({s: outcome(reports / s) if runs[s].status == "ok" else None for s in papers})
            for s in papers:
                entry = res["papers"].setdefault(s, {})
                entry[f"seconds_jobs{jobs}"] = round(runs[s].seconds, 1)
                if runs[s].status != "ok": entry["error"] = str(runs[s].error)[:500]
        for s in papers:
            a, b = (f[s] for f in found)
            entry = res["papers"][s]
            entry.update(ok=a is not None and b is not None, **(compare(a, b) if a and b else {}))
            print(s, entry, flush=True)
    (REPO / "benchmarks" / "determinism.json").write_text(json.dumps(res, indent=1) + "\n")
    bad = [s for s, e in res["papers"].items() if not e["ok"] or e["differ"] or e["verdicts"] or e["gates"]]
    print("byte-identical, same verdicts:", "all papers" if not bad else f"NOT for {', '.join(bad)}")
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main())
