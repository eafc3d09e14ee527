"Diagnostic after the results (no verdict changes): CPG - baseline at 64 px (8x8 maps) with T 1 / literal Eq. 7, and at 128 px (16x16 maps)."
import json, time, numpy as np, torch
from paperlib.core import parallel_map, compute_threads
from paperlib.papers.fewshot_seg_cpg import *
from paperlib.segment import episode_list, Episode, class_miou
out = {}
for side in (64, 128):
    D = synth_fss(0, dict(train=60, val=10, test=30), 0, side)
    torch.set_num_threads(2)
    net, head, _ = pretrain_backbone(D, epochs=30, batch=16, lr=1e-2, seed=0)
    bm = base_miou(net, head, D)
    tr = Features(*backbone_features(net, D.images["train"]), D.labels["train"])
    te = Features(*backbone_features(net, D.images["test"]), D.labels["test"])
    ep1 = episode_list(D.shows["test"], D.novel, 1, 300, 0); cls = np.array([e.cls for e in ep1])
    eps = episode_list(D.shows["train"], D.base, 1, 8000, 11)
    jobs = [("baseline", {}), ("CPG", {}), ("CPG", dict(T=1)), ("CPG", dict(cpg_mode="literal"))] if side == 64 else [("baseline", {}), ("CPG", {})]
    def job(j):
        m, _ = train_dcnet(j[0], tr, eps, steps=1000, batch=8, lr=3e-3, seed=11, **j[1]); return predict(m, te, ep1)["counts"]
    t = time.time(); res = parallel_map(job, jobs, workers=2)
    base = res[0]
    out[side] = dict(base_miou=round(bm, 1), seconds=round(time.time() - t),
                     **{f"{v} {kw}": [round(x, 2) for x in delta_miou(c, base, cls, B=1000)] for (v, kw), c in zip(jobs[1:], res[1:])},
                     baseline_miou=round(100 * class_miou(base, cls), 2))
    print(side, out[side], flush=True)
print(json.dumps(out, indent=1))
