"""What the Dask executor costs against the local runner: the same batch (every paper's ci profile, forced) run by
`reproduce(jobs=2)` and by `reproduce(executor="dask")` on a loopback cluster of two one-thread workers, so both run
two notebooks at once with one thread each.

    .venv/bin/python benchmarks/bench_dask.py [papers] [--rounds 2] [--profile ci]

Rounds alternate local / dask so a change of background load hits both. The dask time is taken twice: with the
cluster started by the executor (what `paperlib reproduce --executor dask` without --scheduler does) and on a
cluster already running (what a user with `--scheduler` sees). Also writes each report folder's size and the time to
pack and unpack it (what a worker ships back). Writes benchmarks/dask.json and prints a markdown table.
"""
import argparse, json, os, platform, statistics, tempfile, time
from pathlib import Path

from paperlib.runner import reproduce
from paperlib.collection import paper_notebooks
from paperlib.cluster import local_cluster, pack, unpack

REPO = Path(__file__).resolve().parents[1]

def timed(papers, profile, reports, **kw) -> tuple[float, dict]:
    t0 = time.time()
    runs = reproduce(papers, profile=profile, force=True, root=REPO, reports=reports, log=lambda *a: None, **kw)
    return round(time.time() - t0, 1), {r.slug: r.status for r in runs}

def shipping(folder: Path) -> dict:
    "Size of a report folder and the time to pack it on the worker and unpack it on the submitter."
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    t0 = time.time(); blob = pack(folder); t1 = time.time()
    with tempfile.TemporaryDirectory() as d: unpack(blob, Path(d) / "x")
    return dict(folder_mb=round(size / 2**20, 2), archive_mb=round(len(blob) / 2**20, 2),
                pack_s=round(t1 - t0, 3), unpack_s=round(time.time() - t1, 3))

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("papers", nargs="*")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--profile", default="ci")
    args = ap.parse_args()
    papers = args.papers or list(paper_notebooks(REPO))
    res = dict(machine=dict(cpus=os.cpu_count(), platform=platform.platform(), when=time.strftime("%Y-%m-%d %H:%M"),
                            load_before=os.getloadavg()), profile=args.profile, papers=papers,
               local_s=[], dask_s=[], dask_running_cluster_s=[], status={})
    with tempfile.TemporaryDirectory() as d:
        for k in range(args.rounds):
            wall, st = timed(papers, args.profile, Path(d) / f"local-{k}", jobs=2)
            res["local_s"].append(wall); res["status"][f"local-{k}"] = st
            wall, st = timed(papers, args.profile, Path(d) / f"dask-{k}", executor="dask")
            res["dask_s"].append(wall); res["status"][f"dask-{k}"] = st
            with local_cluster(2) as cluster:
                wall, st = timed(papers, args.profile, Path(d) / f"dask-up-{k}", executor="dask",
                                 scheduler=cluster.scheduler_address)
            res["dask_running_cluster_s"].append(wall); res["status"][f"dask-up-{k}"] = st
            print(k, res["local_s"][-1], res["dask_s"][-1], res["dask_running_cluster_s"][-1], flush=True)
        res["shipping"] = {s: shipping(Path(d) / "dask-0" / s) for s in papers}
    med = {k: statistics.median(res[k]) for k in ("local_s", "dask_s", "dask_running_cluster_s")}
    res["ratio_dask_to_local"] = round(med["dask_s"] / med["local_s"], 3)
    res["ratio_running_cluster_to_local"] = round(med["dask_running_cluster_s"] / med["local_s"], 3)
    (REPO / "benchmarks" / "dask.json").write_text(json.dumps(res, indent=1) + "\n")
    print(f"\n| batch ({len(papers)} papers, {args.profile}) | median wall | vs local |\n|---|---|---|")
    print(f"| local, jobs=2 | {med['local_s']} s | 1 |")
    print(f"| dask, cluster started by the run | {med['dask_s']} s | {res['ratio_dask_to_local']} |")
    print(f"| dask, cluster already running | {med['dask_running_cluster_s']} s | {res['ratio_running_cluster_to_local']} |")
    print("\n| paper | report folder | archive | pack | unpack |\n|---|---|---|---|---|")
    for s, v in res["shipping"].items():
        print(f"| `{s}` | {v['folder_mb']} MB | {v['archive_mb']} MB | {v['pack_s']} s | {v['unpack_s']} s |")

if __name__ == "__main__":
    main()
