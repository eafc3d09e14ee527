"""Turn the issue-27 re-audit records (benchmarks/audit27/<slug>.json: fresh smoke runs at seeds 0, 1, 2 taken by the
re-audit, on a machine loaded by other runs) into the per-paper records that `readme_numbers.py` reads
(benchmarks/papers/<slug>.json, the format `seed_stability.py` writes). A paper whose record seed_stability.py wrote
itself is left alone unless --force.

    .venv/bin/python benchmarks/import_audit27.py [--force]
"""
import argparse, json, re
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ORDER = ("reproduced", "not reproduced", "inconclusive", "not checkable")

def counts_of(tally: str) -> dict:
    "'6/3/1/0 (+4)' -> {'reproduced': 6, ..., 'informational': 4}."
    m = re.match(r"\s*(\d+)/(\d+)/(\d+)/(\d+)(?:\s*\(\+(\d+)\))?", tally)
    if not m: raise ValueError(f"not a tally: {tally!r}")
    return {**dict(zip(ORDER, map(int, m.groups()[:4]))), "informational": int(m.group(5) or 0)}

def convert(rec: dict) -> dict:
    runs = {}
    for seed, r in rec["new"].items():
        counts = counts_of(r["tally"])
        checks = {v: int((r.get("checks") or {}).get(v, 0)) for v in (*ORDER, "informational")}
        m, n = sum(counts[v] for v in ORDER), counts["reproduced"] + counts["not reproduced"]
        runs[str(seed)] = dict(status="ok", wall_s=float(rec["smoke_seconds"][str(seed)]), load_before=None, loaded=True,
                               counts=counts, checks=checks, tested=f"{n} of the paper's {m} claims tested on this data",
                               verdicts=r.get("verdicts", {}), gates=r.get("gates", {}))
    seeds = sorted(runs, key=int)
    ids = sorted({c for r in runs.values() for c in r["verdicts"]})
    moving = {c: {s: runs[s]["verdicts"].get(c, "absent") for s in seeds} for c in ids}
    moving = {c: v for c, v in moving.items() if len(set(v.values())) > 1}
    return dict(paper=rec["paper"], profile="smoke", commit=rec.get("commit"), seeds=[int(s) for s in seeds], runs=runs,
                moving=moving, machine=dict(cpus=2, when=rec.get("when", "2026-11-26 00:00"), note="re-audit runs, machine loaded"),
                source="benchmarks/audit27/" + rec["paper"] + ".json")

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    (BENCH / "papers").mkdir(exist_ok=True)
    for p in sorted((BENCH / "audit27").glob("*.json")):
        out = BENCH / "papers" / p.name
        if out.exists() and not args.force and "source" not in json.loads(out.read_text()): continue
        out.write_text(json.dumps(convert(json.loads(p.read_text())), indent=1, sort_keys=True) + "\n")
        print("wrote", out.relative_to(BENCH.parent))

if __name__ == "__main__":
    main()
