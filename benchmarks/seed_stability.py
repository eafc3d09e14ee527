"""Which verdicts move with the seed: every paper's smoke profile at seeds 0, 1 and 2, side by side.

    .venv/bin/python benchmarks/seed_stability.py [papers] [--seeds 0 1 2] [--profile smoke]

Each (paper, seed) is a fresh, forced run into its own scratch reports folder (never a verdict re-decided from an
old run). The first seed's run is then compared with each other seed's by `paperlib diff` (`paperlib.diff.diff_runs`):
the verdicts that changed, the values beyond the runs' own seed noise, those within it, those without a noise
estimate, and the table cells that changed. Writes one record per paper, benchmarks/papers/<slug>.json (every
claim's verdict, kind and gates per seed, why each inconclusive one is, the effect tally, the checks, the gates, the wall time and the machine's load
average when the run started, the diffs, the commit), the figure benchmarks/seed_stability.png from every record,
and prints the claims whose verdict differs between seeds. `benchmarks/readme_numbers.py` (`make numbers`) writes the README's per-paper rows from the records.
"""
import argparse, json, os, platform, subprocess, tempfile, time
from pathlib import Path

from paperlib.runner import reproduce
from paperlib.collection import paper_notebooks
from paperlib.report import VERDICTS
from paperlib.diff import diff_runs

REPO = Path(__file__).resolve().parents[1]
COLORS = {"reproduced": "#2e9e4f", "not reproduced": "#c0392b", "inconclusive": "#e0a800", "not checkable": "#9aa0a6",
          "informational": "#7fb3e6", "failed": "#000000"}

def seed_diff(a: Path, b: Path) -> dict:
    "What `paperlib diff` says of two seeds' runs of one paper, short enough for the record."
    d = diff_runs(a, b)
    return dict(verdicts={c: [x, y] for c, x, y in d.verdicts}, beyond=[v["name"] for v in d.moved], within=len(d.within),
                unjudged=len(d.unjudged), table_cells=sum(t["cells"] for t in d.tables),
                table_cells_changed=sum(t["changed"] for t in d.tables))

def run_seeds(papers, seeds, profile) -> tuple[dict, dict]:
    out, diffs = {}, {}
    with tempfile.TemporaryDirectory() as d:
        for s in papers:
            out[s] = {}
            for seed in seeds:
                reports = Path(d) / f"{s}-{seed}"
                load = round(os.getloadavg()[0], 2)
                t0 = time.time()
                r, = reproduce([s], profile=profile, seed=seed, force=True, root=REPO, reports=reports, log=lambda *a: None)
                wall = round(time.time() - t0, 1)
                claims = json.loads((reports / s / "claims.json").read_text()) if r.status == "ok" else {}
                out[s][seed] = dict(status=r.status, wall_s=wall, load_before=load, error=(r.error or "")[:300],
                                    counts=claims.get("counts"), checks=claims.get("checks"), tested=claims.get("tested"),
                                    verdicts={c["id"]: c["verdict"] for c in claims.get("claims", [])},
                                    kinds={c["id"]: c.get("kind", "effect") for c in claims.get("claims", [])},
                                    gates={g["id"]: g["passed"] for g in claims.get("gates", [])},
                                    claim_gates={c["id"]: c.get("gates") or [] for c in claims.get("claims", [])},
                                    reasons={c["id"]: c.get("reason") for c in claims.get("claims", [])
                                             if c["verdict"] == "inconclusive"})
                print(s, seed, r.status, wall, out[s][seed]["counts"], flush=True)
            first = Path(d) / f"{s}-{seeds[0]}" / s
            diffs[s] = {f"{seeds[0]}-{x}": seed_diff(first, Path(d) / f"{s}-{x}" / s) for x in seeds[1:]
                        if out[s][x]["status"] == "ok" and out[s][seeds[0]]["status"] == "ok"}
    return out, diffs

def moving(per_seed: dict, diffs: dict | None = None) -> dict:
    """claim -> its verdicts per seed, for the claims whose verdict is not the same at every seed: those `paperlib diff`
    found changed between the first seed and another (`diffs`), and a claim missing from a failed run."""
    ids = sorted({c for r in per_seed.values() for c in r["verdicts"]}, key=lambda c: (len(c), c))
    changed = {c for x in (diffs or {}).values() for c in x["verdicts"]}
    vs = {c: {seed: r["verdicts"].get(c, "failed") for seed, r in per_seed.items()} for c in ids}
    return {c: v for c, v in vs.items() if c in changed or "failed" in v.values() and len(set(v.values())) > 1}

def figure(res: dict, path: Path):
    import matplotlib; matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    papers = list(res)
    fig, axes = plt.subplots(1, len(papers), figsize=(2.6 * len(papers), 7), squeeze=False)
    for ax, s in zip(axes[0], papers):
        seeds = list(res[s])
        ids = sorted({c for r in res[s].values() for c in r["verdicts"]}, key=lambda c: (len(c), c))
        for j, seed in enumerate(seeds):
            for i, c in enumerate(ids):
                v = res[s][seed]["verdicts"].get(c, "failed")
                ax.add_patch(plt.Rectangle((j, i), 0.95, 0.95, color=COLORS.get(v, "#000")))
        ax.set(xlim=(0, len(seeds)), ylim=(len(ids), 0), title=s.replace("_", "\n", 1), xticks=[j + 0.475 for j in range(len(seeds))],
               xticklabels=[f"seed {x}" for x in seeds], yticks=[i + 0.475 for i in range(len(ids))], yticklabels=ids)
        ax.tick_params(length=0, labelsize=8); ax.title.set_fontsize(9)
        for sp in ax.spines.values(): sp.set_visible(False)
    fig.legend(handles=[Patch(color=c, label=v) for v, c in COLORS.items()], loc="lower center", ncol=6, frameon=False, fontsize=8)
    fig.suptitle("Smoke verdicts per seed: a claim whose colour changes along its row moves with the seed", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.96))
    fig.savefig(path, dpi=110); plt.close(fig)

def commit() -> str:
    try: return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    except OSError: return ""

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("papers", nargs="*")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--profile", default="smoke")
    args = ap.parse_args()
    papers = args.papers or list(paper_notebooks(REPO))
    res, diffs = run_seeds(papers, args.seeds, args.profile)
    machine = dict(cpus=os.cpu_count(), platform=platform.platform(), when=time.strftime("%Y-%m-%d %H:%M"))
    folder = REPO / "benchmarks" / "papers"
    folder.mkdir(exist_ok=True)
    for s in papers:
        rec = dict(paper=s, profile=args.profile, commit=commit(), machine=machine, seeds=args.seeds,
                   runs={str(k): v for k, v in res[s].items()}, diffs=diffs[s], moving=moving(res[s], diffs[s]))
        (folder / f"{s}.json").write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    records = {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
    figure({s: r["runs"] for s, r in records.items()}, REPO / "benchmarks" / "seed_stability.png")
    for s in papers:
        m = moving(res[s], diffs[s])
        print(f"{s}: " + ("no verdict moves with the seed" if not m else
                          "; ".join(f"{c} {' / '.join(v[x] for x in args.seeds)}" for c, v in m.items()))
              + "; values beyond seed noise: " + (", ".join(f"{k}: {len(x['beyond'])} of {len(x['beyond']) + x['within']}"
                                                       for k, x in diffs[s].items()) or "no diff"))

if __name__ == "__main__":
    main()
