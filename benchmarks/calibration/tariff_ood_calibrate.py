"""Blind calibration of tariff_ood's smoke recipe / TOUSim tariff response (issue 28), on CALIBRATION run seeds only.

Prints only what the notebook's calibration protocol allows: the gates L1, S1, S2 (their numbers and margins), the
training summary (best / stopped epochs) and timings. No claim is computed.
  python benchmarks/calibration/tariff_ood_calibrate.py lr                    # step 1: LR range test
  python benchmarks/calibration/tariff_ood_calibrate.py gates SEED LR WD [SCALE] [EPOCHS]
  python benchmarks/calibration/tariff_ood_calibrate.py round2 SEED MONTH PATIENCE   # round 2: MONTH paper|seen, PATIENCE 4|none
  python benchmarks/calibration/tariff_ood_calibrate.py round3 SEED RESTARTS         # round 3: round 2's choice, refits of stuck fits
"""
import sys, json, time
import numpy as np, torch
from paperlib.core import replicate_seeds, compute_threads
from paperlib.train import lr_range_test
from paperlib.papers import tariff_ood as T

SMOKE = dict(n_consumers=12, n_days=180, split=(120, 150), tin=(5, 15, 35), replicates=3, n_out_eval=10)

def cfg(scale=1.0):
    return T.TOUSimConfig(n_consumers=SMOKE["n_consumers"], n_days=SMOKE["n_days"], split=SMOKE["split"], shift_scale=scale)

def lr_step(seed=1_000_000):
    s = replicate_seeds(seed, SMOKE["replicates"], "replicates")[0]
    sets = T.window_sets(T.tousim_data(T.TOUSim(cfg(), seed=s), 5, SMOKE["n_out_eval"]))
    out = {}
    for m in ("NoX", "Att.+PE"):
        torch.manual_seed(0)
        model = T.TOUForecaster(m)
        g = torch.Generator().manual_seed(0)
        f = lr_range_test(model, T._step_loss(1e-3), T._batches(sets["train"], 64, 4, g, "cpu"), lr_min=1e-5, lr_max=1.0, steps=150)
        out[m] = dict(suggested=f.suggested, diverged=f.diverged)
    print(json.dumps(out))

def gates(seed, lr, wd, scale=1.0, epochs=20, patience=4, month="paper", restarts=0):
    t0 = time.time()
    reps = replicate_seeds(seed, SMOKE["replicates"], "replicates")
    sims = {s: T.TOUSim(cfg(scale), seed=s) for s in reps}
    settings = {(s, k, "main"): T.tousim_data(sims[s], k, SMOKE["n_out_eval"]) for s in reps for k in SMOKE["tin"]}
    plan = [(key, m) for key in settings for m in T.METHODS]
    recipe = dict(epochs=epochs, batch=64, lr=lr, n_tau=4, schedule="one-cycle", weight_decay=wd, patience=patience, restarts=restarts)
    with compute_threads(1):
        res = T.evaluate_settings(settings, plan, recipe, n_out_eval=SMOKE["n_out_eval"], log=lambda *a: None, workers=2,
                                  month=month)
    A, F = res["aql"], res["fits"]
    iid_by = A[A.scenario == "IID"].groupby(["seed", "k", "method"]).aql.mean()
    naive = {(s, k): float(T.naive_window_aql(settings[(s, k, "main")], res["sets"][(s, k, "main")]["iid"],
                                              res["sets"][(s, k, "main")]["mu"], res["sets"][(s, k, "main")]["sd"]).mean())
             for s in reps for k in SMOKE["tin"]}
    l1 = 1 - max(iid_by[(s, k, m)] / b for (s, k), b in naive.items() for m in T.METHODS) - 0.10
    means = A.groupby(["scenario", "k", "method", "seed"]).aql.mean().groupby(["scenario", "k", "method"]).mean()
    KS = SMOKE["tin"]
    s1 = {k: means[("IID", k, "NoX")] - max(means[("IID", k, m)] for m in T.METHODS if m not in ("NoX", "UB")) for k in KS}
    s1_next = {k: max((m for m in T.METHODS if m not in ("NoX", "UB")), key=lambda m: means[("IID", k, m)]) for k in KS}
    s2 = {k: means[("OOD", k, "Att.+PE")] - means[("OOD", k, "UB")] for k in KS}
    l1_fails = [f"{m} |T_in| {k} replicate {s}: {iid_by[(s, k, m)] / b:.3f} x naive"   # the L1 gate's own rule and reason
                for (s, k), b in naive.items() for m in T.margin_rule({m: iid_by[(s, k, m)] for m in T.METHODS}, b, 0.10)]
    refit = F[F.refits > 0]
    out = dict(seed=seed, lr=lr, wd=wd, scale=scale, epochs=epochs, patience=patience, month=month, restarts=restarts,
               refits={f"{r.method} |T_in| {r.k} replicate {r.seed}": int(r.refits) for r in refit.itertuples()},
               L1_margin=round(l1, 4), L1_fails=l1_fails, S1_margin_by_k={k: round(v, 5) for k, v in s1.items()}, S1_next_worst=s1_next,
               S2_margin_by_k={k: round(v, 5) for k, v in s2.items()},
               holds=bool(l1 >= 0 and min(s1.values()) >= 0.001 and min(s2.values()) >= 0.001),
               best_epoch_median=float(F.best_epoch.median()), epochs_run_median=float(F.epochs.median()),
               share_best_at_budget_end=float((F.best_epoch == epochs).mean()),
               share_stopped_early=float((F.epochs < epochs).mean()), seconds=round(time.time() - t0, 1),
               load=round(__import__("os").getloadavg()[0], 2))
    print(json.dumps(out))

if __name__ == "__main__":
    if sys.argv[1] == "lr": lr_step()
    elif sys.argv[1] == "round2":   # round 1's choice (lr 5e-3, weight decay 0.1, 20 epochs, shift_scale 1) with the two knobs
        gates(int(sys.argv[2]), 5e-3, 0.1, 1.0, 20, None if sys.argv[4] == "none" else int(sys.argv[4]), sys.argv[3])
    elif sys.argv[1] == "round3":   # round 2's choice A (month seen, patience 4) with refits of fits that do not beat naive in training
        gates(int(sys.argv[2]), 5e-3, 0.1, 1.0, 20, 4, "seen", int(sys.argv[3]))
    else: gates(int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), *(float(a) for a in sys.argv[5:6]),
                *(int(a) for a in sys.argv[6:7]))
