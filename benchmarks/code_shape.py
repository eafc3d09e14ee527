"""The shape of the code, as issue 29 measures it: per paper, exported vs unexported code lines of its notebook and
the lines of its module, now and before the paper kit (`--before`, default the last commit before issue 29's work);
across paperlib, every function over 60 lines and every paper module over 700 lines; per library notebook, the
exported cells with more than two public definitions and those with no test below them (neither a test cell next,
nor a note naming the tests/ file that runs them).

    .venv/bin/python benchmarks/code_shape.py [--before REF]   # writes benchmarks/code_shape.json, prints the offenders
"""
from __future__ import annotations
import argparse, ast, json, subprocess, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FUNC_LIMIT, MODULE_LIMIT, DEFS_PER_CELL = 60, 700, 2
BEFORE_KIT = "bcba5cb"     # main just before issue 29's first commit (44b5230, the plan declaration)

def notebook_lines(text: str) -> dict:
    "Non-blank code lines of a notebook (its JSON `text`): in exported cells, in other cells (tests and the experiment)."
    out = dict(exported=0, unexported=0)
    for c in json.loads(text)["cells"]:
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

def public_defs(src: str) -> list[str]:
    "The public functions and classes an exported cell defines."
    try: tree = ast.parse(src)
    except SyntaxError: return []
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")]

def cell_style(nb: Path) -> dict:
    "A library notebook's exported cells with more than DEFS_PER_CELL public definitions, and those with no test below."
    cells, crowded, untested = json.loads(nb.read_text())["cells"], [], []
    for i, c in enumerate(cells):
        src = "".join(c["source"])
        if c["cell_type"] != "code" or not src.startswith("#| export") or not (defs := public_defs(src)): continue
        j = i + 1
        while j < len(cells) and cells[j]["cell_type"] == "markdown" and "tests/test_" not in "".join(cells[j]["source"]): j += 1
        nxt = cells[j] if j < len(cells) else None
        tested = nxt is not None and (nxt["cell_type"] == "markdown" or not "".join(nxt["source"]).startswith("#| export"))
        if len(defs) > DEFS_PER_CELL: crowded.append(defs)
        if not tested: untested.append(defs)
    return dict(crowded=crowded, untested=untested)

def git_show(ref: str, path: str) -> str | None:
    p = subprocess.run(["git", "show", f"{ref}:{path}"], cwd=ROOT, capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else None

def paper_shape(slug: str, ref: str | None = None) -> dict | None:
    "Exported / unexported notebook lines and module lines of paper `slug`, in the tree or at git `ref`."
    nb, mod = f"nbs/papers/{slug}.ipynb", f"paperlib/papers/{slug}.py"
    read = (lambda p: (ROOT / p).read_text() if (ROOT / p).exists() else None) if ref is None else (lambda p: git_show(ref, p))
    text = read(nb)
    if text is None: return None
    return dict(notebook_lines(text), module_lines=len((read(mod) or "").splitlines()))

def main(before: str = BEFORE_KIT) -> Path:
    papers = {}
    for nb in sorted((ROOT / "nbs" / "papers").glob("[!_]*.ipynb")):
        papers[nb.stem] = dict(paper_shape(nb.stem), before=paper_shape(nb.stem, before))
    style = {nb.name: cell_style(nb) for nb in sorted((ROOT / "nbs").glob("[0-9][0-9]_*.ipynb"))}
    longs = sorted((f for py in sorted((ROOT / "paperlib").rglob("*.py")) if py.name != "_modidx.py"
                    for f in long_functions(py)), key=lambda f: -f["lines"])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    rec = dict(commit=commit, when=time.strftime("%Y-%m-%d %H:%M"), function_limit=FUNC_LIMIT, module_limit=MODULE_LIMIT,
               before_ref=before, papers=papers, long_functions=longs,
               modules_over_limit=[s for s, p in papers.items() if p["module_lines"] > MODULE_LIMIT],
               defs_per_cell_limit=DEFS_PER_CELL, library_cells={k: v for k, v in style.items() if v["crowded"] or v["untested"]},
               library_cells_over=sum(len(v["crowded"]) for v in style.values()),
               library_cells_untested=sum(len(v["untested"]) for v in style.values()))
    out = ROOT / "benchmarks" / "code_shape.json"
    out.write_text(json.dumps(rec, indent=1) + "\n")
    print(f"{len(longs)} function(s) over {FUNC_LIMIT} lines:", ", ".join(f"{f['name']} ({f['lines']})" for f in longs[:15]))
    print(f"paper modules over {MODULE_LIMIT} lines:", ", ".join(f"{s} ({papers[s]['module_lines']})" for s in rec["modules_over_limit"]) or "none")
    print(f"library notebooks: {rec['library_cells_over']} exported cell(s) with more than {DEFS_PER_CELL} public definitions, "
          f"{rec['library_cells_untested']} with no test below, in", ", ".join(rec["library_cells"]) or "none")
    return out

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default=BEFORE_KIT, help="git ref of the 'before' numbers (default: just before issue 29)")
    print(main(ap.parse_args().before))
