"""How the collection degrades on a busy machine: each paper's smoke profile on an idle machine and beside a fixed
synthetic load (two processes spinning, one per core), and the whole collection with one and two notebooks at once.

    .venv/bin/python benchmarks/contention.py [papers] [--load 2] [--no-batch]

The load processes are started and stopped by this script, whatever happens (an error, Ctrl-C). A fair share of two
busy cores is a 2x slowdown; the thread policy of paperlib.core aims at no more than 2.5x. Writes
benchmarks/contention.json and benchmarks/contention.png, and prints a markdown table for the README.
"""
import argparse, contextlib, json, multiprocessing as mp, os, platform, tempfile, time
from pathlib import Path

from paperlib.runner import reproduce
from paperlib.collection import paper_notebooks

REPO = Path(__file__).resolve().parents[1]

def _spin():
    while True: pass

@contextlib.contextmanager
def busy(n: int):
    "n processes spinning on the CPU for the duration of the block; always stopped."
    procs = [mp.get_context("spawn").Process(target=_spin, daemon=True) for _ in range(n)]
    try:
        for p in procs: p.start()
        time.sleep(1)
        yield
    finally:
        for p in procs:
            if p.is_alive(): p.terminate()
        for p in procs: p.join(5)

def timed(papers, profile, jobs, reports) -> tuple[float, dict]:
    t0 = time.time()
    runs = reproduce(papers, profile=profile, jobs=jobs, force=True, root=REPO, reports=reports, log=lambda *a: None)
    return round(time.time() - t0, 1), {r.slug: dict(status=r.status, seconds=round(r.seconds, 1), verdicts=r.verdicts) for r in runs}

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("papers", nargs="*")
    ap.add_argument("--load", type=int, default=2, help="spinning processes beside the loaded runs (default 2)")
    ap.add_argument("--profile", default="smoke")
    ap.add_argument("--no-batch", action="store_true", help="skip the whole-collection JOBS=1 / JOBS=2 comparison")
    args = ap.parse_args()
    papers = args.papers or list(paper_notebooks(REPO))
    out = REPO / "benchmarks" / "contention.json"
    res = dict(machine=dict(cpus=os.cpu_count(), platform=platform.platform(), when=time.strftime("%Y-%m-%d %H:%M")),
               load=args.load, profile=args.profile, papers={})
    if args.papers and out.exists():      # some papers measured anew: the others' earlier rows are kept, each with its date
        old = json.loads(out.read_text())
        if (old.get("load"), old.get("profile")) == (args.load, args.profile):
            res = {**old, "papers": {k: {"when": old["machine"]["when"], **v} for k, v in old["papers"].items()}}
    with tempfile.TemporaryDirectory() as d:
        for s in papers:
            idle, r_idle = timed([s], args.profile, 1, Path(d) / f"{s}-idle")
            with busy(args.load): loaded, r_loaded = timed([s], args.profile, 1, Path(d) / f"{s}-loaded")
            res["papers"][s] = dict(when=time.strftime("%Y-%m-%d %H:%M"), idle_s=idle, loaded_s=loaded, slowdown=round(loaded / idle, 2),
                                    status=[r_idle[s]["status"], r_loaded[s]["status"]],
                                    same_verdicts=r_idle[s]["verdicts"] == r_loaded[s]["verdicts"])
            print(s, res["papers"][s], flush=True)
        if not args.no_batch:
            for jobs in (1, 2):
                wall, runs = timed(papers, args.profile, jobs, Path(d) / f"batch-{jobs}")
                res[f"collection_jobs{jobs}_s"] = wall
                print(f"collection, jobs={jobs}: {wall} s", {s: r["status"] for s, r in runs.items()}, flush=True)
    out.write_text(json.dumps(res, indent=1) + "\n")
    papers = list(res["papers"])
    import matplotlib; matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(1.4 * len(papers) + 2, 3.6))
    x = range(len(papers))
    ax.bar([i - 0.2 for i in x], [res["papers"][s]["idle_s"] for s in papers], 0.4, label="idle")
    ax.bar([i + 0.2 for i in x], [res["papers"][s]["loaded_s"] for s in papers], 0.4, label=f"beside {args.load} busy processes")
    for i, s in enumerate(papers):
        ax.text(i + 0.2, res["papers"][s]["loaded_s"], f'{res["papers"][s]["slowdown"]}x', ha="center", va="bottom", fontsize=8)
    ax.set(xticks=list(x), ylabel="seconds", title=f"{args.profile} wall time, idle and loaded ({os.cpu_count()} cores)")
    ax.set_xticklabels([s.replace("_", "\n", 1) for s in papers], fontsize=8); ax.legend(frameon=False, fontsize=8)
    fig.tight_layout(); fig.savefig(REPO / "benchmarks" / "contention.png", dpi=110); plt.close(fig)
    print("\n| paper | idle | loaded | slowdown |\n|---|---|---|---|")
    for s, v in res["papers"].items(): print(f"| `{s}` | {v['idle_s']} s | {v['loaded_s']} s | {v['slowdown']}x |")
    if not args.no_batch: print(f"\ncollection: JOBS=1 {res['collection_jobs1_s']} s, JOBS=2 {res['collection_jobs2_s']} s")

if __name__ == "__main__":
    main()
