"""Each paper's real-data path through the runner, on a tiny dataset written in the real layout and then broken the
ways real files break. Not a test of the loaders (tests/test_<slug>.py does that, fast): this checks what a user
sees, end to end, through `paperlib reproduce --data-root`.

    .venv/bin/python benchmarks/break_data.py [papers] [--limit N]

For every paper whose tests/test_<slug>.py exposes `write_tiny_dataset(data_root)` and `BREAKAGES` (a list of
`(name, mutate, expected)`): a ci run on the tiny dataset must succeed and say "real data"; then, for each breakage,
a forced run on the broken copy must fail with an error that contains `expected`, names the broken file, keeps the
whole message in status.json, and leaves the last good report in place. Writes benchmarks/break_data.json.
"""
import argparse, importlib.util, json, shutil, sys, tempfile, time
from pathlib import Path

from paperlib.runner import reproduce
from paperlib.collection import paper_notebooks

REPO = Path(__file__).resolve().parents[1]

def test_module(slug: str):
    "tests/test_<slug>.py as a module (None when it has no tiny dataset and breakages)."
    p = REPO / "tests" / f"test_{slug}.py"
    if not p.exists(): return None
    sys.path.insert(0, str(REPO / "tests"))
    try:
        spec = importlib.util.spec_from_file_location(f"_break_{slug}", p)
        mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    finally: sys.path.pop(0)
    return mod if hasattr(mod, "write_tiny_dataset") and hasattr(mod, "BREAKAGES") else None

def file_names(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*") if p.is_file()} | {p.name for p in root.rglob("*") if p.is_dir()}

def check_paper(slug: str, mod, work: Path, limit: int | None) -> list[dict]:
    good_root, reports = work / "good", work / "reports"
    mod.write_tiny_dataset(good_root)
    run = lambda root: reproduce([slug], profile="ci", data_root=str(root), force=True, reports=reports, log=lambda *a: None)[0]
    r = run(good_root)
    m = json.loads((reports / slug / "manifest.json").read_text()) if r.status == "ok" else {}
    rows = [dict(paper=slug, case="tiny dataset, unbroken", ok=r.status == "ok" and m.get("data", {}).get("kind") == "real",
                 status=r.status, error=(r.error or "")[:300], seconds=round(r.seconds, 1))]
    print(rows[-1], flush=True)
    if not rows[-1]["ok"]: return rows
    good_html = (reports / slug / "report.html").read_bytes()
    for name, mutate, expected in mod.BREAKAGES[:limit]:
        root = work / "broken"
        shutil.rmtree(root, ignore_errors=True); shutil.copytree(good_root, root)
        before = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
        mutate(root)
        after = {p.relative_to(root): p.read_bytes() if p.is_file() else None for p in root.rglob("*")}
        touched = {p.name for p in set(before) ^ {q for q in after if after[q] is not None}} | \
                  {p.name for p in before if after.get(p) not in (None, before[p])}
        # a removed folder may be named by its own name; files removed or added inside a folder, by that folder
        touched |= {d.name for p in before for d in p.parents if d.parts and not (root / d).exists()}
        touched |= {p.parent.name for p in set(before) ^ {q for q in after if after[q] is not None} if p.parent.parts}
        r = run(root)
        status = json.loads((reports / "status.json").read_text())[slug]
        kept = (reports / slug / "report.html").read_bytes() == good_html
        names_file = not touched or any(t in (r.error or "") for t in touched)
        ok = r.status == "failed" and expected in (r.error or "") and names_file and kept and status["error"] == r.error
        rows.append(dict(paper=slug, case=name, ok=ok, status=r.status, expected=expected, names_file=names_file,
                         last_good_kept=kept, error=(r.error or "")[:300], seconds=round(r.seconds, 1)))
        print(("ok  " if ok else "FAIL"), slug, name, "->", (r.error or r.status).splitlines()[0][:160], flush=True)
    return rows

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("papers", nargs="*")
    ap.add_argument("--limit", type=int, help="at most N breakages per paper")
    args = ap.parse_args()
    rows, t0 = [], time.time()
    for slug in args.papers or list(paper_notebooks(REPO)):
        mod = test_module(slug)
        if mod is None:
            print(f"{slug}: tests/test_{slug}.py has no write_tiny_dataset/BREAKAGES; skipped"); continue
        with tempfile.TemporaryDirectory() as d: rows += check_paper(slug, mod, Path(d), args.limit)
    out = REPO / "benchmarks" / "break_data.json"
    out.write_text(json.dumps(dict(when=time.strftime("%Y-%m-%d %H:%M"), seconds=round(time.time() - t0), cases=rows), indent=1) + "\n")
    bad = [r for r in rows if not r["ok"]]
    print(f"{len(rows) - len(bad)} of {len(rows)} cases as expected" + (f"; not: {[(r['paper'], r['case']) for r in bad]}" if bad else ""))
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main())
