"Blind calibration of fewshot_seg_cpg, round 2 (seed 1000001, fold 0, smoke sizes): the backbone's budget and the decoder's rate, by the gates' quantities only."
import json, sys, time
import numpy as np, torch
from paperlib.papers.fewshot_seg_cpg import *
from paperlib.segment import episode_list, Episode, class_miou
from paperlib.train import lr_range_test
torch.set_num_threads(2)
SEED, out = 1000001, {}
D = synth_fss(0, dict(train=60, val=10, test=30), SEED)
what = sys.argv[1]
if what == "backbone":
    for epochs, lr in ((5, 3e-3), (5, 1e-2), (15, 3e-3), (15, 1e-2)):
        t = time.time(); net, head, fit_ = pretrain_backbone(D, epochs=epochs, batch=16, lr=lr, seed=SEED)
        out[f"epochs {epochs}, lr {lr:g}"] = dict(base_miou=round(base_miou(net, head, D), 2), seconds=round(time.time() - t, 1))
        print(out, flush=True)
else:
    epochs, plr = int(sys.argv[2]), float(sys.argv[3])
    net, head, _ = pretrain_backbone(D, epochs=epochs, batch=16, lr=plr, seed=SEED)
    out["backbone"] = dict(epochs=epochs, lr=plr, base_miou=round(base_miou(net, head, D), 2))
    tr = Features(*backbone_features(net, D.images["train"]), D.labels["train"])
    te = Features(*backbone_features(net, D.images["test"]), D.labels["test"])
    ep1 = episode_list(D.shows["test"], D.novel, 1, 300, SEED)
    orc = [Episode(e.cls, e.query, (e.query,)) for e in ep1]
    cls = np.array([e.cls for e in ep1])
    out["prior"] = round(100 * class_miou(prior_counts(te, ep1), cls), 2)
    eps = episode_list(D.shows["train"], D.base, 1, 1000 * 8, SEED)
    m = DCNet(tr.mid.shape[1], 32, "map")
    from paperlib.papers.fewshot_seg_cpg import seg_loss
    batches = (episode_batch(tr, eps[i:i + 8]) for i in range(0, len(eps), 8))
    f = lr_range_test(m, lambda mm, b: seg_loss(mm(b), b["q_mask"]), batches, lr_min=1e-5, lr_max=1.0, steps=100)
    out["lr_range_test"] = dict(suggested=f.suggested, diverged=f.diverged)
    for lr in sorted({1e-3, 3e-3, round(f.suggested, 6)}):
        t = time.time(); model, fit_ = train_dcnet("baseline", tr, eps, steps=1000, batch=8, lr=lr, seed=SEED)
        out[f"baseline lr {lr:g}"] = dict(miou_1shot=round(100 * class_miou(predict(model, te, ep1)["counts"], cls), 2),
                                          oracle=round(100 * class_miou(predict(model, te, orc)["counts"], cls), 2),
                                          final_loss=round(float(fit_.curve.loss.iloc[-100:].mean()), 3), seconds=round(time.time() - t, 1))
        print(out, flush=True)
print(json.dumps(out, indent=1))
