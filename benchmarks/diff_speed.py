"""How long `paperlib diff` takes on two collection folders (issue 31: under 5 s for ten papers on 2 cores).

    .venv/bin/python benchmarks/diff_speed.py A B [--repeat 5]     # A, B: reports folders, e.g. ci runs at seeds 0 and 1
Writes benchmarks/diff_speed.json: wall seconds of each whole command (process start included), and the folders' papers.
"""
import argparse, json, os, statistics, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a"); ap.add_argument("b"); ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    walls = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "paperlib.cli", "diff", args.a, args.b], capture_output=True, cwd=ROOT)
        walls.append(round(time.perf_counter() - t0, 3))
    papers = sorted(p.name for p in Path(args.a).iterdir() if (p / "claims.json").exists() and (Path(args.b) / p.name / "claims.json").exists())
    rec = dict(when=time.strftime("%Y-%m-%d %H:%M"), cpus=os.cpu_count(), load_before=round(os.getloadavg()[0], 1),
               papers=papers, seconds=walls, median=statistics.median(walls))
    (ROOT / "benchmarks" / "diff_speed.json").write_text(json.dumps(rec, indent=1) + "\n")
    print(rec)

if __name__ == "__main__":
    main()
