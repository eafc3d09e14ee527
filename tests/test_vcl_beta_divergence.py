"""Tests of the VCL paper: the DigitAttr-40 generator and its noisy pool, the beta similarity inside the library's
NT-Xent against an NT-Xent written out here, the variational terms, the mechanism (E2), the bad inputs the issue
names, and the real-data path on a tiny CelebA and YFCC-CelebA written in their layouts (`write_tiny_dataset`)."""
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from paperlib.contrastive import simclr_loss
from paperlib.data import DataError
from paperlib.datasets import write_tiny_celeba, write_tiny_yfcc_celeba
from paperlib.papers.vcl_beta_divergence import (
    ATTRIBUTES, OBJECTIVES, BetaSimilarity, Objective, beta_similarity, check_eta, decay_rate, digit_attr, digit_attributes,
    draw_cells, fine_tune, jsd_gaussian, kl_to_standard, label_subset, make_backbone, noisy_pool, objective_loss, pretrain,
    pull_ratio, real_attr, render, digit_halves)


def write_tiny_dataset(data_root: Path) -> None:
    "A tiny CelebA (32 faces with identities, landmarks, 40 attributes and a partition) and 10 unlabelled web images."
    write_tiny_celeba(Path(data_root) / "celeba", per_person=4)
    write_tiny_yfcc_celeba(Path(data_root) / "yfcc_celeba", n=10)


def test_attributes_are_flip_invariant_on_rendered_canvases():
    "A flipped canvas shows the same digits in the same rows: its attributes are the original's (as CelebA's under a flip)."
    rng = np.random.default_rng(0)
    cells = draw_cells(500, rng)
    flipped = cells[:, [1, 0, 3, 2]]
    assert np.array_equal(digit_attributes(cells), digit_attributes(flipped))
    assert digit_attributes(cells).shape == (500, len(ATTRIBUTES)) == (500, 40)


def test_test_canvases_use_unseen_handwriting():
    a, b = digit_halves(3)
    assert len(np.intersect1d(a, b)) == 0
    X = render(np.array([[5, -1, -1, -1]]), b, np.random.default_rng(0))
    assert X.shape == (1, 3, 16, 16)


def test_noisy_pool_share_and_bad_eta():
    P, kinds = noisy_pool(200, 0.25, digit_halves(0)[0], np.random.default_rng(1))
    assert P.shape == (200, 3, 16, 16)
    assert (np.isin(kinds, ["photo", "lfw", "noise"])).sum() == 50
    for bad in (1.0, 1.5, -0.01, "half"):
        with pytest.raises(ValueError, match=r"\[0, 1\)"): check_eta(bad)


def test_beta_similarity_in_the_library_nt_xent_matches_a_written_out_nt_xent():
    "simclr_loss(distance=BetaSimilarity) equals -log softmax of s_beta / tau at the positive, written here with logsumexp."
    g = torch.Generator().manual_seed(0)
    z = torch.randn(16, 128, generator=g)
    tau, beta = 0.07, 0.005
    zn = F.normalize(z, dim=1)
    S = beta_similarity(torch.cdist(zn, zn), beta) / tau
    S = S.masked_fill(torch.eye(16, dtype=torch.bool), float("-inf"))
    pos = torch.cat([torch.arange(8, 16), torch.arange(8)])
    manual = -(S[torch.arange(16), pos] - torch.logsumexp(S, 1)).mean()
    got = simclr_loss(z, tau, distance=BetaSimilarity(beta))
    assert torch.isfinite(got)
    assert torch.allclose(got, manual, rtol=1e-4, atol=1e-4)


def test_mechanism_far_pairs_fade_only_under_the_code_constants():
    assert pull_ratio(lambda d: beta_similarity(d, 0.005)) < 0.1
    assert pull_ratio(lambda d: beta_similarity(d, 0.005)) == pytest.approx(math.exp(-2 * decay_rate(0.005)), rel=1e-4)
    assert pull_ratio(lambda d: -d) == pytest.approx(1.0)
    assert pull_ratio(lambda d: beta_similarity(d, 0.005, c=1, p=0.5)) > 0.95          # the text's constants: almost nothing


def test_variational_terms_against_torch_distributions():
    from torch.distributions import Normal, kl_divergence
    g = torch.Generator().manual_seed(1)
    m1, l1, m2, l2 = (torch.randn(32, 4, generator=g, dtype=torch.float64) for _ in range(4))
    assert torch.allclose(jsd_gaussian(m1, l1, m2, l2), jsd_gaussian(m1, l1, m2, l2, "torch_kl"), atol=1e-10)
    assert torch.allclose(kl_to_standard(m1, l1), kl_divergence(Normal(m1, (0.5 * l1).exp()), Normal(0.0, 1.0)), atol=1e-10)


def test_bad_inputs_name_the_valid_choices():
    with pytest.raises(ValueError, match="beta must be > 0"): BetaSimilarity(beta=0)
    with pytest.raises(ValueError, match="beta must be > 0"): objective_loss(Objective(beta=-0.1))
    with pytest.raises(ValueError, match="valid: appendix, eq4_literal, torch_kl"): objective_loss(Objective(jsd_variant="js"))
    with pytest.raises(ValueError, match="is 0 image"): label_subset(30, 0.01)
    X = digit_attr(0, dict(train=40, val=10, test=10)).X["train"]
    with pytest.raises(ValueError, match="valid presets: paper, lightly_default"):
        pretrain(OBJECTIVES["SimCLR"], X, arch="vgg_mini_bn", side=16, width=4, steps=1, batch=8, lr=1e-3, weight_decay=0.01,
                 aug=dict(preset="simclr"), seed=0)


def test_a_weights_file_that_is_not_vgg16_bn(tmp_path):
    bad = tmp_path / "w.pth"
    torch.save({"fc.weight": torch.zeros(2, 2)}, bad)
    with pytest.raises(DataError, match="not a VGG16-bn state dict"): make_backbone("vgg16_bn", 128, weights=bad)
    bad.write_bytes(b"not a torch file")
    with pytest.raises(DataError, match="cannot read a state dict"): make_backbone("vgg16_bn", 128, weights=bad)


def test_same_replicate_same_batches():
    "Two runs of one objective and seed are identical; the replicate's seed pairs every objective's batches and views."
    X = digit_attr(0, dict(train=64, val=10, test=10)).X["train"]
    kw = dict(arch="vgg_mini_bn", side=16, width=4, steps=3, batch=16, lr=1e-3, weight_decay=0.01, aug=dict(scale=(0.4, 1.0)))
    torch.manual_seed(0); a = pretrain(OBJECTIVES["VCL-β"], X, seed=5, **kw)
    torch.manual_seed(0); b = pretrain(OBJECTIVES["VCL-β"], X, seed=5, **kw)
    assert np.allclose(a.history.loss, b.history.loss)


def test_fine_tune_reads_the_first_labels_by_index():
    D = digit_attr(1, dict(train=100, val=20, test=30))
    bb = make_backbone("vgg_mini_bn", 16, 4)[0]
    r = fine_tune(bb, 256, D, 0.1, epochs=1, batch=16, lr=1e-3, seed=0)
    assert r["n_labels"] == 10 and r["image_acc"].shape == (30,)
    D.Y["train"][10:] = 1 - D.Y["train"][10:]             # labels past the first 10 % do not matter
    torch.manual_seed(0); a = fine_tune(bb, 256, D, 0.1, epochs=1, batch=16, lr=1e-3, seed=0)
    D.Y["train"][10:] = 1 - D.Y["train"][10:]
    torch.manual_seed(0); b = fine_tune(bb, 256, D, 0.1, epochs=1, batch=16, lr=1e-3, seed=0)
    assert np.array_equal(a["image_acc"], b["image_acc"])


def test_real_path_reads_the_tiny_layout(tmp_path):
    from paperlib.datasets import read_celeba_attrs, read_image_tree
    write_tiny_dataset(tmp_path)
    (tmp_path / "celeba/img_align_celeba/000002.jpg").write_bytes(b"not a jpeg")
    D = real_attr(read_celeba_attrs(tmp_path / "celeba"), read_image_tree(tmp_path / "yfcc_celeba"), 32, None, 0)
    n = sum(len(y) for y in D.Y.values())
    assert n == 31 and D.X["train"].shape[1:] == (3, 32, 32) and D.Y["train"].shape[1] == 40
    assert D.pools["noisy"].shape == (10, 3, 32, 32)
    assert any("undecodable" in n for n in D.notes)
