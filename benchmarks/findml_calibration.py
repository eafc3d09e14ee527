"""findml_parade's blind calibration (issue 28): part B's learning rate and steps, and the CelebA-like ladder, measured on
calibration seeds only (>= 1,000,000), with the gates learned_B, sa and gap and PARADE's training curves; no claim is
computed. The knobs and the rule are in the notebook's 'Blind calibration' section (fixed before this script ran).

    PYTHONPATH=. python benchmarks/findml_calibration.py lr
    PYTHONPATH=. python benchmarks/findml_calibration.py standard --lr 2e-3 --steps 900
    PYTHONPATH=. python benchmarks/findml_calibration.py parade --lr 2e-3
    PYTHONPATH=. python benchmarks/findml_calibration.py gates --lr 2e-3 --steps 1800 --shift 0.06 --benches CelebA-like

Each phase appends its numbers to benchmarks/findml_calibration.json."""
from __future__ import annotations
import argparse, json, os, time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np
import torch

from paperlib.core import replicate_seeds, parallel_map
from paperlib.train import lr_range_test
from paperlib.metric import make_dml_loss, make_dml_miner, batches, chance_r1
from paperlib.fairness import subgroup_gap, OVERALL
from paperlib.papers.findml_parade import (VARIANTS, ParadeNet, mlp_backbone, digits_attr_bench, method_spec, train_parade,
                                           run_attr_job, gate_learned, gate_sa_learned, gate_gap_exists)

CAL_SEEDS = (1_000_000, 1_000_001)
PARADE_HP = {"LFW-like": (0.3, 100.0), "CelebA-like": (0.1, 1000.0), "colour-like": (0.3, 1500.0)}
B_METHODS = {"colour-like": ("Margin·D", "Triplet·D")}
OUT = Path(__file__).with_name("findml_calibration.json")
CFG = dict(batch_size=40, m=4, weight_decay=4e-4, xi_lr=1e-3, xi_hidden=64, classifiers=("LR",), device="cpu")


def record(phase: str, data: dict):
    rec = json.loads(OUT.read_text()) if OUT.exists() else dict(paper="findml_parade", runs=[])
    assert all(s >= 1_000_000 for s in CAL_SEEDS)
    rec["runs"].append(dict(phase=phase, time=time.strftime("%Y-%m-%d %H:%M:%S"), load=os.getloadavg()[0], **data))
    OUT.write_text(json.dumps(rec, indent=1, default=float))


def range_test(bench_name: str, seed: int = CAL_SEEDS[0]) -> dict:
    "Smith's test on the standard model's step loss (Margin·D, distance-weighted) on the benchmark's training batches."
    b = digits_attr_bench(bench_name, seed, dim=32)
    spec = method_spec("Margin·D")
    classes, y_idx = torch.unique(torch.as_tensor(b.y_tr), return_inverse=True)
    torch.manual_seed(seed % 2**31)
    net = ParadeNet(mlp_backbone(), 128, 32)
    loss = make_dml_loss("margin", num_classes=len(classes), embedding_size=32, **spec["loss_params"])
    miner = make_dml_miner("distance_weighted", **spec["miner_params"])
    both = torch.nn.ModuleDict(dict(net=net, loss=loss))            # the backbone, the class head and beta
    stream = batches(y_idx.numpy(), CFG["batch_size"], CFG["m"], seed)
    feed = ((b.X_tr[torch.from_numpy(i)], y_idx[torch.from_numpy(i)]) for i in stream)
    def step_loss(m, batch):
        e = m["net"](batch[0])
        return m["loss"](e, batch[1], miner(e, batch[1]))
    f = lr_range_test(both, step_loss, feed, lr_min=1e-5, lr_max=1.0, steps=100, weight_decay=4e-4)
    return dict(bench=bench_name, suggested=f.suggested, diverged=f.diverged,
                curve=f.curve[["lr", "smooth"]].iloc[::10].round(5).to_dict("records"))


def round125(x: float) -> float:
    e = np.floor(np.log10(x)); m = x / 10 ** e
    c = min((1, 2, 5, 10), key=lambda v: abs(np.log(m / v)))
    return float(c * 10 ** e)


def _standard(item):
    bench_name, seed, k, method, lr, steps, shift = item
    b = digits_attr_bench(bench_name, seed, dim=32, thick_shift=shift)
    s = replicate_seeds(seed, 5, "part_b")[k]
    r = run_attr_job(b, dict(part="B", method=method, arm="standard", alpha=0.0, rho=0.0, seed=s, classifiers=("LR",)),
                     {**CFG, "steps": steps, "lr": lr})
    up = {x["group"]: x["value"] for x in r["rows"] if x["stage"] == "up" and x["metric"] == "R@1"}
    gap = subgroup_gap({g: v for g, v in up.items() if g != OVERALL}, **b.gap)
    return dict(bench=bench_name, cal_seed=seed, block=k, seed=s, method=method, r1_over_chance=up[OVERALL] / chance_r1(b.y_te),
                probe_psi=r["probe_psi"], n_values=len(b.values), gap_minus_perm=gap - r["perm_gap"],
                train_seconds=r["train_seconds"])


def gates(rows: list) -> dict:
    "learned_B, sa and gap per benchmark and calibration seed, as the notebook decides them (blocks = training seeds), with margins."
    out = {}
    for bench in sorted({r["bench"] for r in rows}):
        for cs in sorted({r["cal_seed"] for r in rows}):
            rr = [r for r in rows if r["bench"] == bench and r["cal_seed"] == cs]
            if not rr: continue
            nv = rr[0]["n_values"]
            ratio = min(r["r1_over_chance"] for r in rr)
            blocks = sorted({r["block"] for r in rr})
            psi = [np.mean([r["probe_psi"] for r in rr if r["block"] == k]) for k in blocks]
            gp = [r["gap_minus_perm"] for r in rr if r["method"] == "Margin·D"]
            out[f"{bench} {cs}"] = dict(
                learned_B=ratio >= 5, learned_B_margin=round(ratio - 5, 2),
                sa=all(gate_sa_learned([p], nv) for p in psi), sa_margin=round(min(psi) - 2 / nv, 3),
                gap=all(g >= 0.02 for g in gp), gap_margin=round(min(gp) - 0.02, 4),
                per_block=dict(probe_psi=[round(p, 3) for p in psi], gap_minus_perm=[round(g, 4) for g in gp]))
    return out


def _parade(item):
    bench_name, seed, k, method, lr, steps = item
    b = digits_attr_bench(bench_name, seed, dim=32)
    s = replicate_seeds(seed, 5, "part_b")[k]
    spec = method_spec(method, lr)
    al, rh = PARADE_HP[bench_name]
    t0 = time.perf_counter()
    r = train_parade(b.model_fn, b.X_tr, b.y_tr, b.a_tr, loss=spec["loss"], miner=spec["miner"], loss_params=spec["loss_params"],
                     miner_params=spec["miner_params"], alpha_sa=al, rho=rh, steps=steps, batch_size=CFG["batch_size"], m=CFG["m"],
                     lr=lr, weight_decay=CFG["weight_decay"], loss_lr=spec["loss_lr"], xi_lr=CFG["xi_lr"], xi_hidden=CFG["xi_hidden"],
                     seed=s, log_every=50)
    h = r.history
    return dict(bench=bench_name, cal_seed=seed, block=k, method=method, seconds=time.perf_counter() - t0,
                finite=bool(np.isfinite(h[["L_targ", "L_sa", "c"]].to_numpy()).all()),
                L_targ=h.L_targ.round(5).tolist(), step=h.step.tolist())


def levelled(runs: list, candidates=(900, 1800, 2700), tol: float = 0.10) -> dict:
    "Per candidate s: mean L_targ over the 100 steps before s vs over the last 100 steps (2 windows of 50), every run."
    out = {}
    for s in candidates:
        worst = 0.0
        for r in runs:
            st, L = np.asarray(r["step"]), np.asarray(r["L_targ"])
            at = L[(st > s - 100) & (st <= s)].mean(); end = L[st > st.max() - 100].mean()
            worst = max(worst, at / end - 1)
        out[s] = dict(worst_excess_over_end=round(float(worst), 4), levelled=bool(worst <= tol))
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=("lr", "standard", "parade", "gates"))
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--steps", type=int, default=900)
    ap.add_argument("--shift", type=float, default=0.0)
    ap.add_argument("--benches", default=",".join(VARIANTS))
    ap.add_argument("--blocks", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    benches = a.benches.split(",")
    t0 = time.perf_counter()
    if a.phase == "lr":
        res = parallel_map(range_test, list(VARIANTS), workers=a.workers)
        r_star = round125(float(np.exp(np.mean(np.log([r["suggested"] for r in res])))))
        for r in res: print(r["bench"], "suggested", f"{r['suggested']:.3g}", "diverged", r["diverged"])
        print("r* =", r_star)
        record("lr", dict(cal_seed=CAL_SEEDS[0], tests=res, r_star=r_star, wall=time.perf_counter() - t0))
    elif a.phase in ("standard", "gates"):
        items = [(b, cs, k, m, a.lr, a.steps, a.shift) for b in benches for cs in CAL_SEEDS for k in range(a.blocks)
                 for m in B_METHODS.get(b, ("Margin·D",))]
        rows = parallel_map(_standard, items, workers=a.workers)
        g = gates(rows)
        for k, v in g.items(): print(k, {x: v[x] for x in v if x != "per_block"}, v["per_block"])
        record(a.phase, dict(lr=a.lr, steps=a.steps, shift=a.shift, gates=g, models=len(rows),
                             train_seconds=sum(r["train_seconds"] for r in rows), wall=time.perf_counter() - t0))
    else:
        items = [(b, cs, k, m, a.lr, 2700) for b in benches for cs in CAL_SEEDS for k in range(2) for m in B_METHODS.get(b, ("Margin·D",))]
        runs = parallel_map(_parade, items, workers=a.workers)
        lv = levelled(runs)
        print("finite:", all(r["finite"] for r in runs)); print("levelled:", lv)
        print("seconds per 2700-step PARADE run:", round(float(np.mean([r["seconds"] for r in runs])), 1))
        record("parade", dict(lr=a.lr, steps=2700, finite=all(r["finite"] for r in runs), levelled=lv, runs=runs,
                              wall=time.perf_counter() - t0))
    print(f"wall {time.perf_counter() - t0:.0f} s, load {os.getloadavg()[0]:.2f}")
