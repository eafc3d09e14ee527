"""The shape of the code, as issue 29 measures it: per paper, exported vs unexported code lines of its notebook and
the lines of its module; across paperlib, every function over 60 lines and every paper module over 700 lines.

    .venv/bin/python benchmarks/code_shape.py        # writes benchmarks/code_shape.json and prints the offenders
"""
from __future__ import annotations
import ast, json, subprocess, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FUNC_LIMIT, MODULE_LIMIT = 60, 700

def notebook_lines(nb: Path) -> dict:
    "Non-blank code lines of `nb`: in exported cells, in other cells (tests and the experiment)."
    out = dict(exported=0, unexported=0)
    for c in json.loads(nb.read_text())["cells"]:
        if c["cell_type"] != "code": continue
        src = "".join(c["source"])
        n = sum(1 for l in src.splitlines() if l.strip() and not l.startswith("#|"))
        out["exported" if any(l.startswith("#| export") for l in src.splitlines()) else "unexported"] += n
    return out

def long_functions(py: Path, limit: int = FUNC_LIMIT) -> list[dict]:
    "Functions and methods of `py` longer than `limit` lines."
    tree = ast.parse(py.read_text())
    return [dict(file=py.relative_to(ROOT).as_posix(), name=n.name, lines=n.end_lineno - n.lineno + 1)
            for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.end_lineno - n.lineno + 1 > limit]

def main() -> Path:
    papers = {}
    for nb in sorted((ROOT / "nbs" / "papers").glob("[!_]*.ipynb")):
        mod = ROOT / "paperlib" / "papers" / f"{nb.stem}.py"
        papers[nb.stem] = dict(notebook_lines(nb), module_lines=len(mod.read_text().splitlines()) if mod.exists() else 0)
    longs = sorted((f for py in sorted((ROOT / "paperlib").rglob("*.py")) if py.name != "_modidx.py"
                    for f in long_functions(py)), key=lambda f: -f["lines"])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    rec = dict(commit=commit, when=time.strftime("%Y-%m-%d %H:%M"), function_limit=FUNC_LIMIT, module_limit=MODULE_LIMIT,
               papers=papers, long_functions=longs,
               modules_over_limit=[s for s, p in papers.items() if p["module_lines"] > MODULE_LIMIT])
    out = ROOT / "benchmarks" / "code_shape.json"
    out.write_text(json.dumps(rec, indent=1) + "\n")
    print(f"{len(longs)} function(s) over {FUNC_LIMIT} lines:", ", ".join(f"{f['name']} ({f['lines']})" for f in longs[:15]))
    print(f"paper modules over {MODULE_LIMIT} lines:", ", ".join(f"{s} ({papers[s]['module_lines']})" for s in rec["modules_over_limit"]) or "none")
    return out

if __name__ == "__main__":
    print(main())
