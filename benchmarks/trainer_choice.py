"""Which trainer for the collection's small models? Four candidates on two papers' learned-gate models, same steps.

Problems (calibration seeds only: nothing here touches an evaluation seed or a claim):
- defect_tdist: the supervised U-Net of the `learned` gate (every label, the main SynthDefects type, smoke sizes:
  120 training images rotated x4, 48 x 48, batch 8, 960 steps); score = AP on a fresh validation draw.
- supcon_strata: the ContrastiveCNN with SupCon + cross-entropy on Digits (the `learned_fine` gate; smoke: 300 steps
  of 128 images, two views each); score = the CE head's accuracy on the held-out split.

Arms, from the same initial weights and the same batches:
- paper: the paper's loop as it is today (Adam at its fixed or cosine rate);
- paperlib: `paperlib.train.lr_range_test` -> `fit` (AdamW, one-cycle, clipping);
- torch-lr-finder: its range test (exponential, 100 steps) picks the rate; then the same `fit`;
- ignite: `FastaiLRFinder` on an ignite Engine picks the rate; then the same `fit`;
- schedulefree: `AdamWScheduleFree` at the range test's rate (5 % warm-up), no schedule, no budget fixed in advance.

torch-lr-finder, pytorch-ignite and schedulefree are not in the environment: install them beside it for this benchmark
only (`pip install --no-deps --target /tmp/trainlibs pytorch-ignite==0.5.5 torch-lr-finder==0.2.2 schedulefree==1.4.1`)
and run `PYTHONPATH=/tmp/trainlibs .venv/bin/python benchmarks/trainer_choice.py` -> benchmarks/trainer_choice.json.
"""
from __future__ import annotations
import itertools, json, math, sys, time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from paperlib.core import CALIBRATION_SEED
from paperlib.train import lr_range_test, fit
from paperlib.segment import UNet, rot4, fit_segmenter, predict_proba, detection_metrics, best_f1_threshold
from paperlib.contrastive import ContrastiveCNN, two_views, contrastive_loss, head_predict
from paperlib.papers import defect_tdist as dt, supcon_strata as sc

OUT = Path(__file__).with_name("trainer_choice.json")
SEEDS = [CALIBRATION_SEED + k for k in range(5)]


def endless(n: int, batch: int, seed: int):
    "Index batches drawn without replacement within each pass, from `seed`."
    rng = np.random.default_rng(seed)
    while True:
        order = rng.permutation(n)
        for i in range(0, n - batch + 1, batch): yield torch.from_numpy(order[i:i + batch])


# ---- problem A: defect_tdist's supervised U-Net --------------------------------------------------------------------
def defect_problem(seed: int) -> dict:
    t = dt.SYNTH_TYPES[dt.MAIN_TYPE]
    tr, va = dt.make_synth(t, 120, 48, seed, "train"), dt.make_synth(t, 60, 48, seed, "test")
    X, Y = rot4(dt._t(tr["X"]), dt._t(tr["Y"]))
    def batches(s):
        for idx in endless(len(X), 8, s): yield X[idx], Y[idx]
    def step_loss(m, b): return F.binary_cross_entropy_with_logits(m(b[0]), b[1])
    def model():
        torch.manual_seed(seed); return UNet((8, 16, 32, 64))
    def score(m):
        thr = best_f1_threshold(predict_proba(m, dt._t(tr["X"])), tr["Y"])[0]   # threshold chosen on training images
        return detection_metrics(predict_proba(m, dt._t(va["X"])), va["Y"], thr)["ap"]
    def paper(m, steps):   # the paper's Step 1: Adam, cosine from 2e-3 to 1e-4 (the smoke's Budget)
        fit_segmenter(m, X, Y, steps=steps, batch_size=8, lr=2e-3, lr_min=1e-4, seed=seed)
    return dict(name="defect_tdist U-Net (learned gate: AP >= 0.8)", steps=960, batches=batches, step_loss=step_loss,
                model=model, score=score, paper=paper)


# ---- problem B: supcon_strata's contrastive CNN ----------------------------------------------------------------------
def supcon_problem(seed: int) -> dict:
    X_all, digit = sc.digits_images()
    D = sc.digits_sets(seed, X_all, digit)["Digits"]
    Xtr, ytr = torch.as_tensor(np.asarray(D.X_tr), dtype=torch.float32), torch.as_tensor(np.asarray(D.y_tr))
    aug = dict(shift=1, brightness=(0.8, 1.2), noise=0.1)
    gen = torch.Generator().manual_seed(seed + 1)
    def batches(s):
        for idx in endless(len(Xtr), 128, s): yield Xtr[idx], ytr[idx]
    def step_loss(m, b):
        z = m(two_views(b[0], gen, **aug))
        return contrastive_loss("supcon", z, b[1], 0.5) + F.cross_entropy(m.head(z), b[1].repeat(2))
    def model():
        torch.manual_seed(seed); return ContrastiveCNN(10, in_ch=Xtr.shape[1], side=Xtr.shape[-1])
    def score(m): return float((head_predict(m, D.X_te) == np.asarray(D.y_te)).mean())
    def paper(m, steps):   # train_contrastive's loop: Adam at 1e-3, fixed
        opt = torch.optim.Adam(m.parameters(), lr=1e-3); b = batches(seed)
        for _ in range(steps):
            m.train(); loss = step_loss(m, next(b)); opt.zero_grad(); loss.backward(); opt.step()
    return dict(name="supcon_strata ContrastiveCNN on Digits (learned_fine gate: head accuracy >= 0.35)", steps=300,
                batches=batches, step_loss=step_loss, model=model, score=score, paper=paper)


# ---- the range tests of the two libraries ----------------------------------------------------------------------------
def lr_torch_lr_finder(model, step_loss, batches) -> float:
    from torch_lr_finder import LRFinder
    class Crit(torch.nn.Module):   # LRFinder calls criterion(model(x), y): hand it the whole batch instead
        def forward(self, loss, _): return loss
    class Wrap(torch.nn.Module):
        def __init__(self, m): super().__init__(); self.m = m
        def forward(self, b): return step_loss(self.m, b)
    from torch_lr_finder.lr_finder import TrainDataLoaderIter
    class Loader(TrainDataLoaderIter):   # an endless batch iterator; the "inputs" are the whole batch
        def inputs_labels_from_batch(self, batch): return batch, torch.zeros(1)
    w = Wrap(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, weight_decay=1e-2)
    finder = LRFinder(w, opt, Crit(), device="cpu")
    finder.range_test(Loader(batches), end_lr=1.0, num_iter=100, step_mode="exp", smooth_f=0.1, diverge_th=4)
    lrs, losses = np.array(finder.history["lr"]), np.array(finder.history["loss"])
    finder.reset()
    # torch-lr-finder's own suggestion: the steepest descent of the (smoothed) loss, skipping the ends as it does
    lo, hi = 10, max(11, len(losses) - 5)
    return float(lrs[lo:hi][np.gradient(losses[lo:hi]).argmin()])


def lr_ignite(model, step_loss, batches) -> float:
    from ignite.engine import Engine
    from ignite.handlers import FastaiLRFinder
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, weight_decay=1e-2)
    def update(engine, b):
        model.train(); loss = step_loss(model, b); opt.zero_grad(); loss.backward(); opt.step(); return loss.item()
    trainer, finder = Engine(update), FastaiLRFinder()
    data = [next(batches) for _ in range(100)]
    with finder.attach(trainer, to_save={"model": model, "optimizer": opt}, start_lr=1e-6, end_lr=1.0, num_iter=100,
                       diverge_th=4.0) as t:
        t.run(data, max_epochs=1)
    return float(finder.lr_suggestion())


def schedulefree_fit(model, step_loss, batches, steps: int, lr: float) -> None:
    import schedulefree
    opt = schedulefree.AdamWScheduleFree(model.parameters(), lr=lr, weight_decay=1e-2, warmup_steps=max(1, steps // 20))
    opt.train()
    for _ in range(steps):
        model.train(); loss = step_loss(model, next(batches)); opt.zero_grad(); loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0); opt.step()
    opt.eval()   # schedule-free keeps two sequences: evaluate at the averaged weights


def arms(P: dict, seed: int) -> list[dict]:
    rows = []
    def run(arm, train):
        torch.manual_seed(seed); m = P["model"]()
        t0 = time.perf_counter(); lr = train(m); wall = time.perf_counter() - t0
        rows.append(dict(problem=P["name"], seed=seed, arm=arm, lr=lr, score=float(P["score"](m)), seconds=round(wall, 1)))
        print(rows[-1], flush=True)
    def ours(m):
        lr = lr_range_test(m, P["step_loss"], P["batches"](seed + 7), steps=100).suggested
        fit(m, P["step_loss"], P["batches"](seed), steps=P["steps"], lr=lr); return lr
    def with_finder(find):
        def train(m):
            lr = find(m, P["step_loss"], P["batches"](seed + 7))   # both suggest the steepest descent: used as they are
            fit(m, P["step_loss"], P["batches"](seed), steps=P["steps"], lr=lr); return lr
        return train
    def sf(m):
        lr = lr_range_test(m, P["step_loss"], P["batches"](seed + 7), steps=100).suggested
        schedulefree_fit(m, P["step_loss"], P["batches"](seed), P["steps"], lr); return lr
    run("paper", lambda m: P["paper"](m, P["steps"]) or None)
    run("paperlib", ours)
    run("torch-lr-finder", with_finder(lr_torch_lr_finder))
    run("ignite", with_finder(lr_ignite))
    run("schedulefree", sf)
    return rows


if __name__ == "__main__":
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
    rows = [r for seed in SEEDS for make in (defect_problem, supcon_problem) for r in arms(make(seed), seed)]
    OUT.write_text(json.dumps(dict(seeds=SEEDS, threads=torch.get_num_threads(), rows=rows), indent=1))
    print(f"wrote {OUT}")
