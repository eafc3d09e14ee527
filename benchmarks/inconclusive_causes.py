"""Why each counted verdict of the seed-stability records is inconclusive: behind a failed gate (which one, of which
kind), or with every gate held (the replicate blocks disagreed, or the rule could not decide).

    .venv/bin/python benchmarks/inconclusive_causes.py

Reads benchmarks/papers/<slug>.json (the smoke runs at seeds 0, 1, 2 that `seed_stability.py` wrote). A claim's gates
come from the record itself when it has them (`claim_gates`, recorded since this script was written), else from the
newest claims.json of that paper under reports/ (any profile: which gates a claim depends on is fixed by the notebook);
a gate's kind, and a claim's kind for the oldest records, from the same file. Writes benchmarks/inconclusive_causes.json and prints one row per paper.
"""
import json
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DECIDED = ("reproduced", "not reproduced")

def newest_claims(slug: str) -> dict:
    "The newest claims.json of `slug` under reports/ (a normal, ci or calibration run), or {}."
    found = list((REPO / "reports").glob(f"**/{slug}/**/claims.json"))      # `**` matches no folder too: reports/<slug>/claims.json
    return json.loads(max(found, key=lambda p: p.stat().st_mtime).read_text()) if found else {}

def causes(record: dict, claims: dict) -> dict:
    "seed -> [{claim, failed gates, their kinds}] for the counted inconclusive verdicts of one paper's record."
    mapped = {c["id"]: c.get("gates") or [] for c in claims.get("claims", [])}
    kind = {g["id"]: g.get("kind", "sanity") for g in claims.get("gates", [])}
    claim_kind = {c["id"]: c.get("kind", "effect") for c in claims.get("claims", [])}
    out = {}
    for seed, run in record["runs"].items():
        gates_of = run.get("claim_gates") or mapped
        out[seed] = []
        for c, v in run["verdicts"].items():
            if v != "inconclusive" or (run.get("kinds") or claim_kind).get(c) == "check": continue
            failed = [g for g in gates_of.get(c, []) if run["gates"].get(g) is False]
            out[seed].append(dict(claim=c, failed=failed, kinds=sorted({kind.get(g, "?") for g in failed}),
                                  mapped=c in gates_of, reason=(run.get("reasons") or {}).get(c)))
    return out

def main():
    rows, total = {}, {}
    for f in sorted((REPO / "benchmarks" / "papers").glob("*.json")):
        rec = json.loads(f.read_text())
        slug = rec["paper"]
        per = causes(rec, newest_claims(slug))
        rows[slug] = dict(commit=rec["commit"], seeds=per)
        for seed, items in per.items():
            t = total.setdefault(seed, Counter())
            c = rec["runs"][seed]["counts"] or {}
            t["decided"] += sum(c.get(v, 0) for v in DECIDED)
            t["inconclusive"] += len(items)
            t["behind a failed gate"] += sum(bool(i["failed"]) for i in items)
            for i in items:
                if i["failed"]: t["gate kind: " + "+".join(i["kinds"])] += 1
            t["every gate held"] += sum(not i["failed"] and i["mapped"] for i in items)
            t["gates unknown"] += sum(not i["mapped"] for i in items)
    summary = {}
    for seed, t in sorted(total.items()):
        n = t["decided"] + t["inconclusive"]
        summary[seed] = dict(t, decided_share=round(t["decided"] / n, 3),
                             share_if_every_gated_decided=round((t["decided"] + t["behind a failed gate"]) / n, 3))
    out = dict(what="counted inconclusive verdicts of the smoke runs at seeds 0-2 (benchmarks/papers/*.json), by cause",
               summary=summary, papers=rows)
    (REPO / "benchmarks" / "inconclusive_causes.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"{'paper':26} " + " | ".join(f"seed {s}: I (gated: failed gates)" for s in sorted(total)))
    for slug, r in rows.items():
        cells = []
        for seed, items in sorted(r["seeds"].items()):
            fg = Counter(g for i in items for g in i["failed"])
            cells.append(f"{len(items)} ({sum(bool(i['failed']) for i in items)}: {', '.join(sorted(fg)) or '-'})")
        print(f"{slug:26} " + " | ".join(cells))
    print(json.dumps(summary, indent=1))

if __name__ == "__main__":
    main()
