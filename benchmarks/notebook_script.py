"""Paper notebooks as plain Python scripts, for a machine without Jupyter (a GPU box with only torch): the parameters
cell replaced, each cell timed (`.gpu/out/<slug>/_cells.json`), `nbdev` cells skipped.

    python benchmarks/notebook_script.py PROFILE THREADS DEVICE slug...    (writes .gpu/<slug>.py)

`bash benchmarks/gpu_batch.sh PROFILE TIMEOUT_S THREADS slug...` then runs them side by side on that machine. The
first full-profile run on a GPU was made this way: benchmarks/gpu_full_2026-11-26.json."""
import json, sys
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
PRE = '''from __future__ import annotations
import time as __pl_time, json as __pl_json, os as __pl_os
import matplotlib; matplotlib.use("Agg")
def display(*a, **k): pass
__pl_T0 = __pl_time.time(); __pl_CELLS = []
def __pl_mark(i, t0):
    __pl_CELLS.append((i, round(__pl_time.time() - t0, 2)))
    print(f"[cell {i}] {__pl_time.time() - t0:.1f}s (total {__pl_time.time() - __pl_T0:.0f}s)", flush=True)
    __pl_json.dump(__pl_CELLS, open(__pl_os.path.join(OUT_DIR, "_cells.json"), "w"))
'''
def build(slug, profile, threads, device="cuda"):
    nb = json.loads((ROOT / "nbs" / "papers" / f"{slug}.ipynb").read_text())
    out = [PRE.replace("OUT_DIR", repr(f".gpu/out/{slug}"))]
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] != "code": continue
        s = "".join(c["source"])
        if "parameters" in c.get("metadata", {}).get("tags", []):
            s = (f'profile = "{profile}"\nseed = 0\ndevice = "{device}"\ndata_root = None\nout_dir = ".gpu/out/{slug}"\nthreads = {threads}\nblind = False\n'
                 f'__pl_os.makedirs(out_dir, exist_ok=True)')
        elif "nbdev_export" in s or s.startswith("#| default_exp"): continue
        s = s.replace("from __future__ import annotations", "")
        out.append(f"__pl_t{i} = __pl_time.time()\n{s}\n__pl_mark({i}, __pl_t{i})\n")
    (ROOT / ".gpu").mkdir(exist_ok=True)                  # a fresh checkout (the GPU machine's) has no .gpu/ yet
    (ROOT / ".gpu" / f"{slug}.py").write_text("\n".join(out))
if __name__ == "__main__":
    profile, threads, device, *slugs = sys.argv[1:]
    for s in slugs: build(s, profile, int(threads), device)
