"""Tests of the BGAugment paper: Eq. 1, BGAugment, Eqs. 2-4, DigitPairs-on-Textures, the background banks, the decision
rules (a passing and a failing case each), and the real-data loaders on a tiny dataset in the real layout with every
bad input we know of (`write_tiny_dataset`, `BREAKAGES`)."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from paperlib.data import DataError
from paperlib.datasets import CUB as CUB_DATASET, CARS, write_tiny_cub, write_tiny_cars
from paperlib.papers.bgaugment_background_bias import (
    composite, random_resized_crop, corrupt, bgaugment, attribution_maps, foreground_score, overlap, iou, perturb_mask,
    pair_classes, make_digit_pairs, home_texture, render_texture, background_bank, B_TRAIN_PHOTOS, B_TEST_PHOTOS,
    Split, DATASET_FOLDERS, BACKGROUND_FOLDER, load_cub, load_cars, load_sop, load_images, load_real_data,
    load_background_folder, check_splits, run_cell, train_cell, table1_rows, per_seed, needs_fallback,
    bgaugment_shared, make_jobs, PAPER_HPARAMS, PAPER_TABLE1, PAPER_TABLE2, loss_distance, losses_needed,
    gate_learned, gate_control, gate_room_drop, gate_room_score, rule_bias, rule_drop_grows, rule_above_random, rule_bgaugment_wins, rule_clean_kept,
    rule_clean_lowered, rule_gap_shrinks, score_tests, rule_scores_higher, rule_score_drop_inverse)
from paperlib.metric import make_loss, LOSSES, random_map_at_r_draws as random_draws


# --- method ---------------------------------------------------------------------------------------------------------

def test_eq1_composite_keeps_object_and_replaces_background():
    I = torch.rand(3, 3, 10, 10); B = torch.rand(3, 3, 10, 10)
    M = torch.zeros(3, 1, 10, 10); M[..., 3:7, 3:7] = 1
    C = composite(I, M, B)
    assert torch.equal(C[..., 3:7, 3:7], I[..., 3:7, 3:7])
    assert torch.equal(C[..., :3, :], B[..., :3, :])
    soft = composite(I, torch.full_like(M, 0.3), B)
    assert torch.allclose(soft, 0.3 * I + 0.7 * B)


def test_corruption_is_seeded_and_uses_the_bank():
    bank = torch.stack([torch.full((3, 16, 16), v) for v in (0.0, 1.0)])
    X = torch.full((40, 3, 8, 8), 0.5); M = torch.zeros(40, 1, 8, 8)
    a, b = corrupt(X, M, bank, 3), corrupt(X, M, bank, 3)
    assert torch.equal(a, b) and not torch.equal(a, corrupt(X, M, bank, 4))
    vals = a[:, 0, 4, 4]                  # constant photos: every background pixel is 0 or 1, and both photos are used
    assert set(vals.round().tolist()) == {0.0, 1.0}


def test_random_resized_crop_flip_and_scale():
    ramp = torch.linspace(0, 1, 32).view(1, 1, 1, 32).expand(1, 3, 32, 32).contiguous()
    out = random_resized_crop(ramp, 200, 8, torch.Generator().manual_seed(0))
    slope = out[:, 0, 4, -1] - out[:, 0, 4, 0]
    assert (slope > 0).any() and (slope < 0).any()          # some crops flipped
    assert slope.abs().max() <= 1.0 + 1e-6


def test_bgaugment_transform_changes_only_background():
    X = torch.rand(6, 3, 8, 8); M = torch.zeros(6, 1, 8, 8); M[..., 2:5, 2:5] = 1
    t = bgaugment(M, torch.rand(5, 3, 16, 16))
    out = t(X[[1, 4]], torch.tensor([1, 4]), torch.Generator().manual_seed(0))
    assert torch.equal(out[..., 2:5, 2:5], X[[1, 4]][..., 2:5, 2:5])
    assert not torch.equal(out, X[[1, 4]])


def test_foreground_score_eqs_2_to_4():
    M = np.zeros((1, 10, 10)); M[0, :, :2] = 1                   # f(M) = 0.2
    A = np.zeros((1, 10, 10)); A[0, :, :1] = 1; A[0, :, 5] = 1   # half the attribution on the object: a = 0.5
    assert foreground_score(M, A)[0] == pytest.approx((0.5 - 0.2) / 0.8)
    assert np.isnan(foreground_score(np.ones((1, 4, 4)), np.ones((1, 4, 4)))[0])
    assert np.isnan(foreground_score(M, np.zeros((1, 10, 10)))[0])


def test_attribution_follows_the_pixels_the_model_uses():
    class TopRows(torch.nn.Module):
        def forward(self, x): return torch.nn.functional.normalize(x[:, :, :2].flatten(1) + 1, dim=1)
    X = torch.rand(3, 3, 6, 6)
    A = attribution_maps(TopRows(), X, "cosine", n_samples=5)
    assert A.shape == (3, 6, 6) and A[:, 2:].abs().max() == 0 and A.max() == 1
    with pytest.raises(ValueError, match="valid: euclidean, cosine"):
        attribution_maps(TopRows(), X, "manhattan")


def test_mask_overlap_and_iou():
    m = torch.zeros(1, 1, 8, 8); m[..., 2:6, 2:6] = 1
    assert overlap(m, m) == 1 and iou(m, m) == 1
    d = perturb_mask(m, "drop", drop=0.5, seed=0)
    assert 0.2 < overlap(m, d) < 0.8 and iou(m, d) == pytest.approx(overlap(m, d))
    with pytest.raises(ValueError, match="valid: erode, dilate, drop"):
        perturb_mask(m, "shift")


# --- embedded data --------------------------------------------------------------------------------------------------

def test_pair_classes_are_disjoint():
    c = pair_classes()
    assert set(c[c.split == "test"].a) == {5, 6, 7, 8, 9}
    assert set(c[c.split == "train"].label).isdisjoint(c[c.split == "val"].label)


def test_digit_pairs_rho_controls_background_class_correlation_only():
    sizes = dict(train=10, val=4, test=4)
    d9, d5, d0 = (make_digit_pairs(r, sizes, seed=1) for r in (0.9, 0.5, 0.0))
    own = lambda d: (d["train"].bg_class == d["train"].y.numpy()).mean()
    assert own(d9) > 0.8 and 0.35 < own(d5) < 0.65 and own(d0) == 0
    assert torch.equal(d9["test"].M, d0["test"].M) and torch.equal(d9["test"].y, d0["test"].y)
    fg = d9["train"].M.bool().expand_as(d9["train"].X)    # foreground pixels identical across rho; backgrounds differ
    assert torch.equal(d9["train"].X[fg], d0["train"].X[fg]) and not torch.equal(d9["train"].X, d0["train"].X)
    again = make_digit_pairs(0.9, sizes, seed=1)           # same seed, same bytes
    assert torch.equal(again["train"].X, d9["train"].X)


def test_home_textures_differ_between_classes():
    r = np.random.default_rng(0)
    a, b = render_texture(home_texture(1), r), render_texture(home_texture(2), r)
    assert a.shape == (3, 32, 32) and np.abs(a.mean((1, 2)) - b.mean((1, 2))).max() > 0.01


def test_background_banks_are_disjoint_and_fixed():
    assert not set(B_TRAIN_PHOTOS) & set(B_TEST_PHOTOS)
    tr, te = background_bank("train", n=20, size=16), background_bank("test", n=20, size=16)
    assert tr.shape == te.shape == (20, 3, 16, 16)
    assert torch.equal(te, background_bank("test", n=20, size=16))


def test_one_bgaugment_model_serves_every_rho():
    d = {r: make_digit_pairs(r, dict(train=3, val=2, test=2), seed=2) for r in (0.0, 0.9)}
    assert bgaugment_shared(d)
    soft = {r: dict(v) for r, v in d.items()}
    soft[0.0]["train"] = Split(d[0.0]["train"].X, d[0.0]["train"].M * 0.7, d[0.0]["train"].y)
    assert not bgaugment_shared(soft)
    bank = torch.rand(4, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    kw = dict(val_corrupted=corrupt(d[0.0]["val"].X, d[0.0]["val"].M, bank, 9), bank_train=bank, widths=(4, 8, 8),
              steps=4, val_every=2, dim=16, seed=5)
    a, _ = train_cell(d[0.0], "contrastive", "bgaugment", **kw)
    kw["val_corrupted"] = corrupt(d[0.9]["val"].X, d[0.9]["val"].M, bank, 9)
    b, _ = train_cell(d[0.9], "contrastive", "bgaugment", **kw)
    assert all(torch.equal(x, y) for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values()))
    jobs = make_jobs(["a", "b", "c"], ["contrastive", "arcface"], [3, 4, 5], share_bgaugment=True)
    assert len(jobs) == 2 * 3 * (3 + 1) and {tuple(j["eval"]) for j in jobs if j["mode"] == "bgaugment"} == {("a", "b", "c")}
    assert len(make_jobs(["a", "b", "c"], ["contrastive"], [0], share_bgaugment=False)) == 6


# --- decision rules: a case that passes and a case that fails ---------------------------------------------------------

def test_losses_needed():
    assert [losses_needed(n) for n in (1, 2, 5)] == [1, 2, 4]


def test_gate_learned():
    assert gate_learned([2.0, 3.0], [0.4, 0.5])
    assert not gate_learned([2.0, 1.9], [0.4, 0.4])           # 4.75x random is below 5x
    assert not gate_learned([], [])


def test_gate_control():
    assert gate_control(drop_least=2.0, drop_most=33.0)
    assert not gate_control(drop_least=9.0, drop_most=33.0)     # more than a quarter of the biased drop
    assert not gate_control(drop_least=-1.0, drop_most=-0.5)    # no drop anywhere: nothing to control


def test_rule_bias_c1():
    assert rule_bias([30.0, 20.0], [0.5, 1.0])
    assert not rule_bias([30.0, 4.0], [0.5, 1.0])              # 4 < 5 x 1
    assert not rule_bias([30.0, -1.0], [0.5, 0.0])


def test_rule_drop_grows_c2():
    assert rule_drop_grows([0.5, 30.0])
    assert not rule_drop_grows([30.0, 0.5])
    assert not rule_drop_grows([1.0, 1.0])
    assert rule_drop_grows([1, 5, 9], rho=[0, 0, .5, .5, .9, .9], drops=[1, 0, 5, 6, 9, 8])
    pts = dict(rho=[0, 0, .5, .5, .9, .9], drops=[3, 0, 0.5, 4, 5, 0.2])     # means 1.5 < 2.25 < 2.6, but no trend
    assert rule_drop_grows([1.5, 2.25, 2.6]) and not rule_drop_grows([1.5, 2.25, 2.6], **pts)


def test_rule_above_random_c5():
    assert rule_above_random([1.0, 0.6], [0.5, 0.5])
    assert not rule_above_random([1.0, 0.4], [0.5, 0.5])
    y = np.arange(200) % 10
    d = random_draws(y, 16, draws=20, seed=1)
    assert d.shape == (20,) and d.std() > 0
    assert not rule_above_random([d.mean() + 1e-4], [d.max()])   # above the random mean is not enough


def test_rule_bgaugment_wins_c6():
    assert rule_bgaugment_wins([3.0, 1.0, 0.5, 2.2])                # every cell up, the mean gain's bound above 0
    assert not rule_bgaugment_wins([3.0, 1.0, -0.5, -0.2])          # 2 of 4
    assert not rule_bgaugment_wins([5.0, 0.01, 0.01, -4.0])          # 3 of 4, but the interval holds 0
    assert rule_bgaugment_wins([1.0] * 14 + [-1.0], gain_most=[1, 1, 1, 1, -1])
    assert not rule_bgaugment_wins([1.0] * 8 + [-1.0] * 3, gain_most=[1, 1, 1, 1, 1])   # sign test p = 0.11


def test_rule_clean_kept_c7_and_lowered_c8():
    assert rule_clean_kept([-0.5, 0.3, 0.1, -0.2]) and not rule_clean_kept([-2.5, -2.6, -2.4, -2.7])
    assert rule_clean_kept([0.0, 0.0, 0.0]) is True                  # identical arms are within any margin
    assert rule_clean_kept([-1.5, 1.5, -1.5, 1.5]) is False           # "not significant" is not "not worse"
    assert rule_clean_kept([0.3]) is None                             # one pair cannot be decided
    assert rule_clean_lowered([-6.5, -8.3, -7.0]) and not rule_clean_lowered([-6.5, 0.1, 4.0])
    assert rule_clean_lowered([0.0, 0.0]) is False                    # a tie is not a drop


def test_rule_gap_shrinks_c9():
    assert rule_gap_shrinks([[2.3, 2.4, 2.2], [33.0, 31.0, 35.0]], [[0.07, 0.1, 0.0], [7.5, 8.0, 7.0]])
    assert rule_gap_shrinks([[-0.5, -0.4]], [[0.8, 0.7]])            # a BGAugment gap within 1 pt counts as removed
    assert not rule_gap_shrinks([[2.0, 2.1], [30.0, 29.0]], [[2.5, 2.6], [7.0, 6.0]])
    assert rule_gap_shrinks([], []) is None


def test_headroom_gates():
    assert gate_room_drop(7.5) and not gate_room_drop(4.9) and not gate_room_drop(float("nan"))
    assert gate_room_score(0.5) and not gate_room_score(0.85)


def test_score_tests_and_rule_c10():
    rng = np.random.default_rng(1)
    b = rng.normal(0.1, 0.1, 100)
    t = score_tests([("S", "c", b, b + 0.1 + rng.normal(0, 0.02, 100)), ("S", "n", b, b - rng.uniform(0, 0.1, 100))])
    assert list(t.columns) == ["setting", "loss", "n", "base", "bgaugment", "p", "p_holm"]
    assert t.p_holm[0] < 0.05 < t.p_holm[1]
    assert rule_scores_higher(t.p_holm[:1]) and not rule_scores_higher(t.p_holm)
    nan = b.copy(); nan[:5] = np.nan
    assert score_tests([("S", "c", nan, b + 1)]).n[0] == 95       # images without a score are left out of the pair


def test_rule_score_drop_inverse_c12():
    assert rule_score_drop_inverse([0.5, 0.25, 0.1], [0.14, 0.38, 0.84])
    assert not rule_score_drop_inverse([0.1, 0.25, 0.5], [0.14, 0.38, 0.84])
    assert not rule_score_drop_inverse([0.1, 0.2, 0.3, 0.4, 0.5], [0.5, 0.2, 0.4, 0.1, 0.3], test=True)
    assert not rule_score_drop_inverse([0.5, 0.4, 0.3, 0.2], [0.1, 0.3, 0.2, 0.4], test=True)   # negative, not significant


def test_per_seed_outcomes():
    df = pd.DataFrame(dict(seed=[4, 3, 4, 3], drop=[5.0, 6.0, -1.0, 7.0], corrupted_std=[0.1] * 4))
    assert per_seed(df, lambda g: rule_bias(g["drop"], g.corrupted_std)) == {3: True, 4: False}


def test_fallback_is_decided_on_validation():
    assert not needs_fallback(0.05, 0.01) and needs_fallback(0.019, 0.01) and not needs_fallback(0.0, None)
    d = make_digit_pairs(0.5, dict(train=4, val=3, test=3), seed=0)
    bank = torch.rand(10, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    kw = dict(test_corrupted=[d["test"].X], val_corrupted=d["val"].X, bank_train=bank, widths=(4, 8, 8), steps=2,
              val_every=2, n_attr=2, attr_samples=2, dim=16, hparams=PAPER_HPARAMS["cub2011"]["triplet"])
    assert run_cell(d, "triplet", "base", "x", val_random=0.0, **kw).hparams == "paper values"
    assert run_cell(d, "triplet", "base", "x", val_random=1.0, **kw).hparams.startswith("PML defaults (fallback: validation")


# --- hyper-parameters, published numbers, one cell --------------------------------------------------------------------

def test_paper_hparams_build_every_loss():
    for ds, per_loss in PAPER_HPARAMS.items():
        for loss, params in per_loss.items():
            assert type(make_loss(loss, num_classes=3, embedding_size=4, **params)).__name__ == LOSSES[loss]
    with pytest.raises(ValueError, match="valid losses: contrastive"):
        loss_distance("n_pairs")


def test_published_numbers():
    drops = {l: PAPER_TABLE1[l]["base"]["SOP"][0] - PAPER_TABLE1[l]["base"]["SOP"][1] for l in PAPER_TABLE1}
    assert np.mean(list(drops.values())) == pytest.approx(33.00, abs=0.01)
    wins = sum(PAPER_TABLE2[l][d][2] > PAPER_TABLE2[l][d][0] for l in PAPER_TABLE2 for d in PAPER_TABLE2[l])
    assert wins == 14


def test_run_cell_is_deterministic_and_complete():
    d = make_digit_pairs(0.9, dict(train=4, val=3, test=3), seed=0)
    bank = torch.rand(10, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    tc = [corrupt(d["test"].X, d["test"].M, bank, k) for k in range(2)]
    vc = corrupt(d["val"].X, d["val"].M, bank, 9)
    kw = dict(test_corrupted=tc, val_corrupted=vc, bank_train=bank, widths=(4, 8, 8), steps=4, val_every=2, n_attr=5,
              attr_samples=2, dim=16)
    a = run_cell(d, "normalized_softmax", "bgaugment", "x", **kw)
    b = run_cell(d, "normalized_softmax", "bgaugment", "x", **kw)
    pd.testing.assert_frame_equal(table1_rows([a], {"x": 0.01}), table1_rows([b], {"x": 0.01}))
    assert len(a.corrupted) == 2 and a.scores.shape == (5,) and a.last_step == 4 and a.state is not None
    with pytest.raises(ValueError, match="valid: base, bgaugment"):
        run_cell(d, "triplet", "mixup", "x", **kw)


# --- the real-data path: a tiny dataset in the real layout -------------------------------------------------------------

TRAIN_CLASSES = 32            # a batch of 32 with one image per class (ArcFace, Normalized Softmax) needs 32 classes


def _img(path, size=(24, 24), value=100, mode="RGB"):
    path.parent.mkdir(parents=True, exist_ok=True)
    shape = (size[1], size[0], 3) if mode == "RGB" else (size[1], size[0])
    Image.fromarray(np.full(shape, value, np.uint8), mode).save(path)


def _classes(train_end, val_start, test_start):
    "(class number 1-based, images): one image per training class, two per val and test class."
    return [(c, 1) for c in range(1, TRAIN_CLASSES + 1)] + [(c, 2) for c in (val_start + 1, val_start + 2)] \
        + [(c, 2) for c in (test_start + 1, test_start + 2)]


def write_cub(root: Path, classes=None):
    "The library's tiny CUB-200-2011 under root/cub2011, with our masks in images_masked/."
    write_tiny_cub(root / "cub2011", classes or _classes(75, 80, 120))
    for p in (root / "cub2011" / "CUB_200_2011" / "images").rglob("*.jpg"):
        _img(root / "cub2011" / "images_masked" / f"{p.stem}.png", mode="L", value=255)


def write_cars(root: Path, classes=None):
    "The library's tiny Cars196 under root/cars196, with our masks in car_ims_masked/."
    write_tiny_cars(root / "cars196", classes or _classes(74, 80, 120))
    for p in (root / "cars196" / "car_ims").glob("*.jpg"):
        _img(root / "cars196" / "car_ims_masked" / f"{p.stem}.png", mode="L", value=200)


def write_sop(root: Path):
    "Stanford Online Products under root/Stanford_Online_Products (Ebay_train/test.txt, images, SOP_masked)."
    base = root / "Stanford_Online_Products"
    train = [(c, 1) for c in range(1, TRAIN_CLASSES + 1)] + [(c, 2) for c in (9000, 9001)]
    for fname, classes in (("Ebay_train.txt", train), ("Ebay_test.txt", [(11319, 2), (11320, 2)])):
        rows = []
        for c, per in classes:
            for k in range(per):
                rows.append((len(rows) + 1, c, 1, f"bicycle_final/{c}_{k}.JPG"))
        base.mkdir(parents=True, exist_ok=True)
        (base / fname).write_text("image_id class_id super_class_id path\n" + "".join(f"{a} {b} {s} {p}\n" for a, b, s, p in rows))
        for *_, p in rows:
            _img(base / p, value=(3 * len(p)) % 256)
            _img((base / "SOP_masked" / p).with_suffix(".png"), mode="L", value=255)


def write_backgrounds(root: Path):
    "Two photos each in root/unsplash_backgrounds/{val,test}."
    for part in ("val", "test"):
        for i in range(2): _img(root / BACKGROUND_FOLDER / part / f"{i}.jpeg", size=(30, 20), value=60 * i + 30)


def write_tiny_dataset(data_root: Path) -> None:
    "The paper's datasets in their real layouts, tiny: CUB, Cars196, SOP (each 32 training classes, 2 val and 2 test classes) and the background photos."
    data_root = Path(data_root)
    write_cub(data_root); write_cars(data_root); write_sop(data_root); write_backgrounds(data_root)


def folders_under(root: Path) -> dict:
    "What the notebook gets from ctx.dataset(...): each dataset folder, or None when absent."
    out = {k: (root / f if (root / f).is_dir() else None) for k, f in DATASET_FOLDERS.items()}
    out["backgrounds"] = root / BACKGROUND_FOLDER if (root / BACKGROUND_FOLDER).is_dir() else None
    return out


def load_tiny(root: Path, **kw):
    "The notebook's loader entry point on `root`."
    return load_real_data(root, folders_under(root), size=8, **kw)


# --- breakages: (name, mutate(data_root), expected substring); the substring names the file and the row/column -------

def _edit(rel, fn):
    def mutate(root):
        p = Path(root) / rel
        lines = p.read_text().splitlines()
        p.write_text("\n".join(fn(lines)) + "\n")
    return mutate


def _set(i, text): return lambda lines: lines[:i] + [text] + lines[i + 1:]


CUB = "cub2011/CUB_200_2011/"
SOP = "Stanford_Online_Products/"


def _too_few_train_classes(root):
    for f in DATASET_FOLDERS.values():
        if f != "cub2011": import shutil; shutil.rmtree(Path(root) / f)
    write_cub(Path(root) / "cub_small", classes=[(c, 1) for c in range(1, 9)] + [(81, 2), (82, 2), (121, 2), (122, 2)])
    import shutil
    shutil.rmtree(Path(root) / "cub2011"); (Path(root) / "cub_small" / "cub2011").rename(Path(root) / "cub2011")


def _in_folder(mutate, folder):
    return lambda root: mutate(Path(root) / folder)


# the library's breakages of the shared datasets, seen through this paper's loader, then this paper's own
BREAKAGES = [(f"{ds.folder}: {name}", _in_folder(mutate, ds.folder), expected)
             for ds in (CUB_DATASET, CARS) for name, mutate, expected in ds.breakages] + [
    ("cub missing mask", lambda root: (Path(root) / "cub2011/images_masked/Bird_3_0000.png").unlink(),
     "images.txt, row 3: missing mask"),
    ("cub mask of another size", lambda root: _img(Path(root) / "cub2011/images_masked/Bird_4_0000.png", size=(5, 5), mode="L"),
     "Bird_4_0000.png is 5x5 but its image"),
    ("cub 8 training classes", _too_few_train_classes, "cub2011 (train 0-74, val 75-99, test 100-199): the train split has 8 classes"),
    ("cub no validation class", _edit(CUB + "image_class_labels.txt", lambda l: [x if int(x.split()[1]) != 82 and int(x.split()[1]) != 81
                                                                                   else f"{x.split()[0]} 3" for x in l]),
     "cub2011 (train 0-74, val 75-99, test 100-199): no image in the val split"),
    ("sop missing column", _edit(SOP + "Ebay_train.txt", lambda l: ["image_id super_class_id path"] + [" ".join(x.split()[:1] + x.split()[2:]) for x in l[1:]]),
     "Ebay_train.txt: missing column(s) ['class_id']"),
    ("sop class id not a number", _edit(SOP + "Ebay_train.txt", _set(2, "2 two 1 bicycle_final/2_0.JPG")),
     "Ebay_train.txt, row 3, column 'class_id': 'two' is not a valid int"),
    ("sop duplicate image id", _edit(SOP + "Ebay_test.txt", _set(2, "1 11319 1 bicycle_final/11319_1.JPG")),
     "Ebay_test.txt, row 3, column 'image_id': '1' repeats row 2"),
    ("sop empty file", lambda root: (Path(root) / SOP / "Ebay_test.txt").write_text(""), "Ebay_test.txt is empty"),
    ("background photo undecodable", lambda root: (Path(root) / BACKGROUND_FOLDER / "test/1.jpeg").write_bytes(b"no jpeg"),
     "unsplash_backgrounds/test/1.jpeg: cannot decode the background photo"),
    ("background folder empty", lambda root: [p.unlink() for p in (Path(root) / BACKGROUND_FOLDER / "val").glob("*")],
     "no background photos (*.jpeg) in"),
]


@pytest.fixture(scope="module")
def tiny_template(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny") / "data"
    write_tiny_dataset(root)
    return root


@pytest.fixture
def tiny(tiny_template, tmp_path):
    import shutil
    return Path(shutil.copytree(tiny_template, tmp_path / "data"))


@pytest.mark.parametrize("name,mutate,expected", BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_breakage_is_a_data_error_naming_file_and_place(tiny, name, mutate, expected):
    mutate(tiny)
    with pytest.raises(DataError) as e:
        load_tiny(tiny)
    assert expected in str(e.value)


def test_tiny_dataset_loads(tiny):
    src, datasets, skipped, banks = load_tiny(tiny)
    assert list(datasets) == ["CUB200", "Cars196", "SOP"] and skipped == dict(CUB200=0, Cars196=0, SOP=0)
    assert [len(datasets["CUB200"][s].y) for s in ("train", "val", "test")] == [TRAIN_CLASSES, 4, 4]
    assert datasets["Cars196"]["val"].y.unique().tolist() == [80, 81] and datasets["SOP"]["val"].y.unique().tolist() == [8999, 9000]
    assert banks[0].shape == (2, 3, 8, 8) and src.kind == "real" and src.params["files"] == 5 + 3 * 2 * 40 + 4


def test_bom_header_is_read(tiny):
    p = tiny / SOP / "Ebay_train.txt"
    p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
    assert len(load_sop(tiny / SOP)) == 40


def test_fingerprint_covers_images_masks_and_backgrounds(tiny):
    fp = load_tiny(tiny)[0].fingerprint
    assert load_tiny(tiny)[0].fingerprint == fp
    for rel, mode in (("cub2011/images_masked/Bird_5_0000.png", "L"), (CUB + "images/006.Bird_6/Bird_6_0000.jpg", "RGB"),
                      (SOP + "SOP_masked/bicycle_final/3_0.png", "L"), (BACKGROUND_FOLDER + "/val/0.jpeg", "RGB")):
        _img(tiny / rel, value=1, mode=mode)                    # garbage content, same layout
        new = load_tiny(tiny)[0].fingerprint
        assert new != fp, rel
        fp = new


def test_dataset_folder_may_be_a_link(tiny, tmp_path):
    root = tmp_path / "root"; root.mkdir()
    (root / "cub2011").symlink_to(tiny / "cub2011", target_is_directory=True)
    src, d, _, banks = load_tiny(root)
    assert list(d) == ["CUB200"] and banks is None and src.params["files"] == 2 + 2 * 40


def test_split_check_comes_before_decoding(tiny, monkeypatch):
    import paperlib.papers.bgaugment_background_bias as m
    _too_few_train_classes(tiny)
    monkeypatch.setattr(m, "load_images", lambda *a, **k: pytest.fail("images decoded before the split check"))
    with pytest.raises(DataError, match="the train split has 8 classes, but ArcFace fills a batch of 32 with 1 image"):
        load_tiny(tiny)
    # ranking losses alone need only 32 / 4 = 8 classes
    monkeypatch.undo()
    src, d, _, _ = load_tiny(tiny, losses=("contrastive",))
    assert len(d["CUB200"]["train"].y) == 8


def test_check_splits_names_the_split():
    idx = pd.DataFrame(dict(label=list(range(32)) + [80, 80, 81, 81] + [120, 121], split=["train"] * 32 + ["val"] * 4 + ["test"] * 2))
    with pytest.raises(DataError, match="the test split has 0 class"):
        check_splits(idx, "cub2011")


def test_undecodable_image_is_skipped_with_warning_and_counted(tiny):
    (tiny / CUB / "images/081.Bird_81/Bird_81_0000.jpg").write_bytes(b"not a jpeg at all")
    ix = load_cub(tiny / "cub2011")
    with pytest.warns(UserWarning, match="Bird_81_0000.jpg: cannot decode"):
        s, skipped = load_images(ix[ix.split == "val"], size=8)
    assert skipped == 1 and len(s.y) == 3


def test_loaders_map_classes_to_splits(tiny):
    assert load_cub(tiny / "cub2011").groupby("split").label.agg(["min", "max"]).to_dict("index") == \
        dict(test=dict(min=120, max=121), train=dict(min=0, max=31), val=dict(min=80, max=81))
    cars = load_cars(tiny / "cars196")
    assert cars.split.value_counts().to_dict() == dict(train=32, val=4, test=4)
    sop = load_sop(tiny / SOP)
    assert sop.mask_path[0].endswith("Stanford_Online_Products/SOP_masked/bicycle_final/1_0.png")


def test_background_folder(tmp_path):
    for i in range(3): _img(tmp_path / "val" / f"{i}.jpeg", size=(30, 20), value=50 * i)
    assert load_background_folder(tmp_path / "val", size=16).shape == (3, 3, 16, 16)
    with pytest.raises(DataError, match="no background photos"):
        load_background_folder(tmp_path / "test")
