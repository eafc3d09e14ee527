"""How long the README's reproduce command takes from a fresh clone, environment creation included.

    python3 benchmarks/reproduce_time.py [--ref HEAD]

Clones the repository at `--ref` into a scratch folder (no .venv, no reports, no caches), runs `make reproduce`
there (smoke profile, embedded data, one notebook at a time, the Makefile's defaults) and writes
benchmarks/reproduce.json: the wall time, each paper's status, time and verdict tally as the CLI's closing table
prints them, the sum over the collection's first ten papers (the papers the collection had when the issue's 30.5-minute
reference was measured), the machine's load average before and after, the commit. Run it on an idle machine.
"""
import argparse, json, os, platform, re, time
from pathlib import Path

from suite_time import REPO, in_fresh_clone   # the same fresh clone as the suite's timing

FIRST_TEN = ("face_verification_bias", "gender_bias_transformers", "bgaugment_background_bias", "tariff_ood", "findml_parade",
             "defect_tdist", "supcon_strata", "feat_face_bias", "salient_facts", "medical_sr_gan")

def paper_rows(out: str) -> dict:
    "slug -> status, seconds, tally from the CLI's closing table (`paper  status  time  re/not/inc/n.c. (+info) ...`)."
    rows = re.findall(r"^(\w+)\s+(ok|failed|timeout|error|skipped|cached)\s+([\d.]+)s\s+(\d+/\d+/\d+/\d+(?: \(\+\d+\))?)", out, re.M)
    return {s: dict(status=st, s=float(t), tally=tally) for s, st, t, tally in rows}

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", default="HEAD")
    args = ap.parse_args()
    commit, p, wall, load = in_fresh_clone(args.ref, "reproduce")
    papers = paper_rows(p.stdout)
    ten = [papers[s]["s"] for s in FIRST_TEN if s in papers]
    rec = dict(when=time.strftime("%Y-%m-%d %H:%M"), commit=commit, cpus=os.cpu_count(), platform=platform.platform(),
               command="make reproduce (fresh clone, environment creation included; smoke, embedded data, JOBS=1)",
               wall_s=round(wall, 1), returncode=p.returncode, load_before=[round(x, 2) for x in load],
               load_after=[round(x, 2) for x in os.getloadavg()], papers=papers,
               first_ten_papers_s=round(sum(ten), 1) if len(ten) == len(FIRST_TEN) else None,
               tail=(p.stdout[-1500:] + p.stderr[-1500:]) if p.returncode else "")
    (REPO / "benchmarks" / "reproduce.json").write_text(json.dumps(rec, indent=1) + "\n")
    print(json.dumps({k: rec[k] for k in ("wall_s", "returncode", "first_ten_papers_s", "load_before")}))
    return p.returncode

if __name__ == "__main__":
    raise SystemExit(main())
