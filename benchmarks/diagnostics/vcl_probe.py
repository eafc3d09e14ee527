"""Diagnostic for vcl_beta_divergence's `learned` gate (issue 28), on a CALIBRATION run seed only: is the linear probe,
rather than the encoders, what holds every encoder at the majority vote? Gate quantities only (linear mean accuracy of
scratch, SimCLR and the supervised ceiling against the majority vote); no claim is computed.
  python benchmarks/diagnostics/vcl_probe.py SEED [REPLICATE_INDEX]
  python benchmarks/diagnostics/vcl_probe.py pretext SEED    # how well SimCLR solves its own task, and colour statistics alone
"""
import sys, json, time
import numpy as np, torch
from sklearn.linear_model import LogisticRegression
from paperlib.core import replicate_seeds
from paperlib.metric import embed, majority_accuracy, multilabel_probe
from paperlib.papers import vcl_beta_divergence as V

SIZES, TRAIN = dict(train=6000, val=1000, test=2000), dict(arch="vgg_mini_bn", side=16, width=16, batch=128, device="cpu")
AUG, SUP_AUG = dict(preset="paper", scale=(0.4, 1.0)), dict(preset=dict(scale=(0.75, 1.0), p_jitter=0.0, gray=0.0))

def logreg(E, Y, Cs=(0.01, 0.1, 1.0, 10.0)):
    "Per attribute, L2 logistic regression (lbfgs) on standardised features, C chosen by val accuracy: mean test / fit acc."
    mu, sd = E["train"].mean(0), E["train"].std(0) + 1e-6
    Z = {s: (e - mu) / sd for s, e in E.items()}
    test, fit, chosen = [], [], []
    for j in range(Y["train"].shape[1]):
        best = None
        for C in Cs:
            m = LogisticRegression(C=C, max_iter=2000).fit(Z["train"], Y["train"][:, j])
            v = (m.predict(Z["val"]) == Y["val"][:, j]).mean()
            if best is None or v > best[0]: best = (v, C, m)
        _, C, m = best
        chosen.append(C); test.append((m.predict(Z["test"]) == Y["test"][:, j]).mean()); fit.append((m.predict(Z["train"]) == Y["train"][:, j]).mean())
    return dict(test=100 * float(np.mean(test)), fit=100 * float(np.mean(fit)), C_median=float(np.median(chosen)))

def probes(bb, D, seed):
    E = {s: embed(bb, D.X[s], "cpu").numpy() for s in ("train", "val", "test")}
    out = {}
    r = multilabel_probe(E["train"], D.Y["train"], E["val"], D.Y["val"], E["test"], D.Y["test"], seed=seed)
    out["probe (as now: AdamW 1e-3, <=15 ep, patience 3)"] = dict(test=100 * r["mean_acc"], best_epoch=r["best_epoch"])
    r = multilabel_probe(E["train"], D.Y["train"], E["val"], D.Y["val"], E["test"], D.Y["test"], seed=seed, lr=1e-2, epochs=100, patience=10)
    out["probe (AdamW 1e-2, <=100 ep, patience 10)"] = dict(test=100 * r["mean_acc"], best_epoch=r["best_epoch"])
    out["sklearn logistic regression, C on val"] = logreg(E, D.Y)
    return out

def calibration_world(seed: int, index: int = 0):
    "(replicate seed, DigitAttr-40 replicate at the smoke's sizes) of calibration run `seed`: never an evaluation seed."
    if seed < 1_000_000: raise SystemExit(f"seed {seed}: calibration seeds only (1000000 and up)")
    r = replicate_seeds(seed, 3, "replicates")[index]
    return r, V.digit_attr(r, SIZES, 0.5, 16)

def simclr(D, r):
    "SimCLR pre-trained on the clean pool as the smoke does it (400 steps, the paper's views)."
    return V.pretrain(V.OBJECTIVES["SimCLR"], D.pools["clean"], steps=400, lr=1e-3, weight_decay=0.01, aug=AUG, seed=r, **TRAIN)

def colour_statistics(x):
    "Per image and channel: mean, sd and the 10 / 90 % quantiles, standardised over the batch (no learning at all)."
    q = x.flatten(2).quantile(torch.tensor([0.1, 0.9]), dim=2).permute(1, 0, 2).flatten(1)
    d = torch.cat([x.mean((2, 3)), x.std((2, 3)), q], 1)
    return (d - d.mean(0)) / d.std(0)

def pretext(seed: int, B: int = 128, n: int = 2048) -> dict:
    """Instance top-1 among B of fresh paper views of the first replicate's clean images: SimCLR after the smoke's 400
    steps (projection and backbone features, cosine), and nearest neighbours of `colour_statistics` alone."""
    import torch.nn.functional as F
    from paperlib.contrastive import rgb_two_views
    r, D = calibration_world(seed)
    run = simclr(D, r)
    net, X, gen = run.model.eval(), torch.as_tensor(D.X["train"][:n]), torch.Generator().manual_seed(1)
    similarity = dict(projection=lambda a, b: F.normalize(net(a), dim=1) @ F.normalize(net(b), dim=1).T,
                      backbone=lambda a, b: F.normalize(net.backbone(a), dim=1) @ F.normalize(net.backbone(b), dim=1).T,
                      colour_statistics=lambda a, b: -torch.cdist(colour_statistics(a), colour_statistics(b)))
    acc = {k: [] for k in similarity}
    with torch.no_grad():
        for i in range(0, n - B + 1, B):
            v = rgb_two_views(X[i:i + B], gen, **AUG)
            for k, sim in similarity.items():
                acc[k].append(float((sim(v[:B], v[B:]).argmax(1) == torch.arange(B)).float().mean()))
    return dict(seed=seed, replicate=r, loss_first_last=[float(run.history.loss.iloc[0]), float(run.history.loss.iloc[-1])],
                chance=1 / B, **{f"instance top-1 among {B}, {k}": 100 * float(np.mean(v)) for k, v in acc.items()})

def probe_check(seed: int, index: int = 0) -> dict:
    "Scratch, SimCLR and the supervised ceiling, each read by the three probes of `probes`; the majority vote beside them."
    r, D = calibration_world(seed, index)
    res = dict(seed=seed, replicate=r, majority=100 * majority_accuracy(D.Y["train"], D.Y["test"])["mean_acc"])
    torch.manual_seed(r)
    res["scratch"] = probes(V.make_backbone("vgg_mini_bn", 16, 16)[0], D, r)
    res["SimCLR clean 400"] = probes(simclr(D, r).model.backbone, D, r)
    sup = V.supervised(D.X["train"], D.Y["train"], steps=400, lr=3e-3, seed=r, aug=SUP_AUG, **TRAIN)[0]
    res["supervised ceiling"] = probes(sup, D, r)
    return res

if __name__ == "__main__":
    t0 = time.time()
    if sys.argv[1] == "pretext":
        torch.set_num_threads(2)
        res = pretext(int(sys.argv[2]))
    else:
        torch.set_num_threads(1)
        res = probe_check(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    res["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(res, indent=1, default=float))
