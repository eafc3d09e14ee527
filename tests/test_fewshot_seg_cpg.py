"""Tests of the DCNet paper: SynthFSS-20i, CPG against Algorithm 1 written out as a loop, the inference cost of BGL and
CPG (claim C5's structural half), the paired episode bootstrap, the bad inputs the issue names, and the real-data
path on a tiny PASCAL-5i written in its layout (`write_tiny_dataset`)."""
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from paperlib.data import DataError
from paperlib.datasets import read_fss_lists, write_tiny_pascal
from paperlib.segment import class_miou, episode_hash, episode_list
from paperlib.papers.fewshot_seg_cpg import (
    CLASSES, VARIANTS, DCNet, Features, cpg, delta_miou, episode_batch, inference_cost, many_shots, predict, real_fss, swap_fg_bg,
    synth_fss, train_dcnet)


def write_tiny_dataset(data_root: Path) -> None:
    "A tiny PASCAL-5i in PFENet's layout: 20 small image / class-id PNG pairs over four folds, 255 borders."
    write_tiny_pascal(Path(data_root) / "pascal")


@pytest.fixture(scope="module")
def fold0():
    return synth_fss(0, dict(train=3, val=1, test=7), seed=0)


def _features(D, split="test", mid=12, high=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = len(D.labels[split])
    return Features(torch.rand(n, mid, 8, 8, generator=g), torch.rand(n, high, 8, 8, generator=g), D.labels[split])


def test_folds_keep_novel_classes_out_of_training(fold0):
    assert len(fold0.novel) == 5 and len(fold0.base) == 15 and len(CLASSES) == 20
    seen = set().union(*fold0.shows["train"], *fold0.shows["val"])
    assert seen <= set(fold0.base) and not seen & set(fold0.novel)
    assert fold0.images["test"].shape == (35, 3, 64, 64)


def test_cpg_matches_algorithm_1_written_as_a_loop():
    "Eqs. 2-7 pixel by pixel in plain Python, against the vectorised module (normalized and literal modes)."
    g = torch.Generator().manual_seed(1)
    Fm, M = torch.rand(1, 3, 4, 4, generator=g), (torch.rand(1, 1, 4, 4, generator=g) > 0.4).float()
    pix = [(i, j) for i in range(4) for j in range(4) if M[0, 0, i, j] > 0]
    v = lambda i, j: Fm[0, :, i, j] * M[0, 0, i, j]
    P = sum(v(i, j) for i, j in pix) / len(pix)
    for _ in range(3):
        S = {p: max(float(F.cosine_similarity(v(*p), P, dim=0)), 0.0) for p in pix}
        total = sum(S.values())
        P = sum(S[p] / total * v(*p) for p in pix)
    P1, P2 = cpg(Fm, M, T=3)
    assert torch.allclose(P1[0], P, atol=1e-5)
    assert torch.allclose(P2[0], sum((1 - S[p]) * v(*p) for p in pix) / sum(1 - S[p] for p in pix), atol=1e-5)
    L1, L2 = cpg(Fm, M, T=3, mode="literal")
    assert torch.allclose(L2[0], sum((1 - S[p] / total) * v(*p) for p in pix), atol=1e-5)


def test_bgl_adds_no_inference_cost_and_cpg_no_parameters(fold0):
    "C5: a model trained with BGL is the same graph at inference; CPG's only parameters are the FEM's wider inputs."
    f = _features(fold0)
    eps = episode_list(fold0.shows["test"], fold0.novel, 1, 16, 0)
    b = episode_batch(f, eps[:1])
    base, _ = train_dcnet("baseline", f, eps, steps=2, batch=8, lr=1e-3, seed=0, width=8)
    bgl, _ = train_dcnet("BGL", f, eps, steps=2, batch=8, lr=1e-3, seed=0, width=8)
    assert inference_cost(base, b) == inference_cost(bgl, b)
    with torch.no_grad():
        from torch.utils.flop_counter import FlopCounterMode
        with FlopCounterMode(display=False) as fc: bgl.train()(b, bgl=True)
    assert fc.get_total_flops() > inference_cost(base, b)["flops"]      # the branch exists, in training only
    widths = 4 * 8 * 8                                                   # 4 FEM scales, one more 8-channel prototype, 8 outputs
    assert inference_cost(DCNet(12, 8, "cpg"), b)["params"] - inference_cost(DCNet(12, 8, "map"), b)["params"] == widths


def test_test_episodes_are_fixed_and_hashed(fold0):
    a = episode_list(fold0.shows["test"], fold0.novel, 5, 50, seed=3)
    assert episode_hash(a) == episode_hash(episode_list(fold0.shows["test"], fold0.novel, 5, 50, seed=3))
    assert episode_hash(a) != episode_hash(episode_list(fold0.shows["test"], fold0.novel, 5, 50, seed=4))


def test_paired_bootstrap_recomputes_class_iou_from_resampled_sums():
    "The bootstrap's estimate is the difference of class mIoUs (not of per-episode IoUs); identical models give 0."
    rng = np.random.default_rng(0)
    a, b = rng.integers(1, 50, (40, 4)), rng.integers(1, 50, (40, 4))
    cls = np.arange(40) % 4 + 1
    est, lo, hi = delta_miou(a, b, cls, B=300)
    assert est == pytest.approx(100 * (class_miou(a, cls) - class_miou(b, cls)))
    assert lo <= est <= hi
    assert delta_miou(a, a, cls, B=100) == (0.0, 0.0, 0.0)


def test_bad_inputs_are_named(fold0):
    with pytest.raises(ValueError, match="fewer than shots"):      # a novel class with under K + 1 images
        episode_list(fold0.shows["test"], fold0.novel, 7, 10, 0)
    with pytest.raises(ValueError, match="shots must be a positive integer"):
        episode_list(fold0.shows["test"], fold0.novel, 0, 10, 0)
    with pytest.raises(ValueError, match="T must be a whole number of at least 1"):
        cpg(torch.rand(1, 2, 4, 4), torch.ones(1, 1, 4, 4), T=0)
    with pytest.raises(ValueError, match="valid: map, cpg, ak, em"):
        DCNet(12, 8, "superpixels")


def test_background_branch_swaps_foreground_and_keeps_ignore():
    assert swap_fg_bg(torch.tensor([[0, 1, 255]])).tolist() == [[1, 0, 255]]
    assert set(VARIANTS) == {"baseline", "CPG", "BGL", "CPG+BGL", "AK", "EM"}


def test_tiny_pascal_fold_keeps_novel_classes_out_of_training(tmp_path):
    write_tiny_dataset(tmp_path)
    table = read_fss_lists(tmp_path / "pascal", 20, "pascal", cache=False)
    D = real_fss(table, "pascal", 0, side=32, cap=None, seed=0)
    assert D.images["train"].shape[1:] == (3, 32, 32) and D.labels["test"].shape[1:] == (32, 32)
    assert not set().union(*D.shows["train"], *D.shows["val"]) & set(D.novel)
    assert all(set(s) & set(D.novel) for s in D.shows["test"])
    assert many_shots(D, real=True) == 2          # the tiny copy's novel class has 3 validation images


def test_real_fold_without_training_images_is_named(tmp_path):
    write_tiny_dataset(tmp_path)
    table = read_fss_lists(tmp_path / "pascal", 20, "pascal", cache=False)
    with pytest.raises(DataError, match="fold 0 has no test image"):
        real_fss(table[table.split == "train"], "pascal", 0, side=32, cap=None, seed=0)
