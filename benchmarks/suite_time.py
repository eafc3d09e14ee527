"""How long the README's test command takes from a fresh clone, environment creation included.

    python3 benchmarks/suite_time.py [--ref HEAD]

Clones the repository at `--ref` into a scratch folder (no .venv, no caches), runs `make test` there with pytest's
25 slowest tests listed, and writes benchmarks/suite.json: the wall time, the tests passed / failed / skipped, the
slowest tests, the machine's load average before and after, the commit. Run it on an idle machine: it is the number
the README quotes for the suite (`benchmarks/readme_numbers.py`).
"""
import argparse, json, os, platform, re, subprocess, tempfile, time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

def counts(tail: str) -> dict:
    "passed / failed / skipped / ... from pytest's last summary line."
    line = [l for l in tail.splitlines() if re.search(r"\d+ (passed|failed)", l)]
    return {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?)", line[-1])} if line else {}

def slowest(out: str, n: int = 25) -> list[dict]:
    "pytest's --durations lines: seconds, phase, test."
    rows = re.findall(r"^([\d.]+)s (call|setup|teardown)\s+(\S+)", out, re.M)
    return [dict(s=float(s), phase=p, test=t) for s, p, t in rows[:n]]

def in_fresh_clone(ref: str, target: str, **env_extra) -> tuple:
    "(commit, finished process, wall seconds, load average before) of `make <target>` in a fresh clone of `ref`."
    commit = subprocess.run(["git", "rev-parse", ref], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix=f"paperlib-{target}-") as d:
        clone = Path(d) / "clone"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        subprocess.run(["git", "checkout", "-q", commit], cwd=clone, check=True)
        load = os.getloadavg()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")} | env_extra
        t0 = time.time()
        p = subprocess.run(["make", target], cwd=clone, env=env, capture_output=True, text=True)
        return commit, p, time.time() - t0, load

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", default="HEAD")
    args = ap.parse_args()
    commit, p, wall, load = in_fresh_clone(args.ref, "test", PYTEST_ADDOPTS="--durations=25")
    (REPO / "benchmarks" / "suite.log").write_text(p.stdout[-200_000:] + p.stderr[-50_000:])
    rec = dict(when=time.strftime("%Y-%m-%d %H:%M"), commit=commit, cpus=os.cpu_count(), platform=platform.platform(),
               command="make test (fresh clone, environment creation included)", wall_s=round(wall, 1), returncode=p.returncode,
               load_before=[round(x, 2) for x in load], load_after=[round(x, 2) for x in os.getloadavg()],
               tests=counts(p.stdout[-3000:]), slowest=slowest(p.stdout))
    (REPO / "benchmarks" / "suite.json").write_text(json.dumps(rec, indent=1) + "\n")
    print(json.dumps({k: rec[k] for k in ("wall_s", "returncode", "tests", "load_before")}))
    return p.returncode

if __name__ == "__main__":
    raise SystemExit(main())
