"Tests of the BGAugment paper's exported pieces: Eq. 1, BGAugment, Eqs. 2-4, DigitPairs-on-Textures, the background banks, the real-data loaders on tiny datasets written here, and the bad inputs the issue lists."
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from paperlib.data import DataError
from paperlib.papers.bgaugment_background_bias import (
    composite, random_resized_crop, corrupt, bgaugment, attribution_maps, foreground_score, overlap, iou, perturb_mask,
    pair_classes, make_digit_pairs, home_texture, render_texture, background_bank, B_TRAIN_PHOTOS, B_TEST_PHOTOS,
    load_cub, load_cars, load_sop, load_images, load_real_dataset, load_background_folder, run_cell, table1_rows,
    PAPER_HPARAMS, PAPER_TABLE1, PAPER_TABLE2, loss_distance)
from paperlib.metric import make_loss, LOSSES


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
    # constant photos: every background pixel is 0 or 1, and both photos are used
    vals = a[:, 0, 4, 4]
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
    # foreground pixels are identical across rho; backgrounds differ
    fg = d9["train"].M.bool().expand_as(d9["train"].X)
    assert torch.equal(d9["train"].X[fg], d0["train"].X[fg]) and not torch.equal(d9["train"].X, d0["train"].X)
    # same seed, same bytes
    again = make_digit_pairs(0.9, sizes, seed=1)
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


# --- real-data loaders ----------------------------------------------------------------------------------------------

def _img(path, size=(12, 10), value=100, mode="RGB"):
    path.parent.mkdir(parents=True, exist_ok=True)
    shape = (size[1], size[0], 3) if mode == "RGB" else (size[1], size[0])
    Image.fromarray(np.full(shape, value, np.uint8), mode).save(path)


def write_cub(root: Path, n_cls=4, per=3, classes=None):
    cub = root / "cub2011" / "CUB_200_2011"
    lines, labs = [], []
    for c in (classes if classes is not None else range(n_cls)):
        for k in range(per):
            rel = f"{c + 1:03d}.Bird/b_{c}_{k}.jpg"
            _img(cub / "images" / rel, value=(30 * c) % 256)
            _img(root / "cub2011" / "images_masked" / f"b_{c}_{k}.png", mode="L", value=255)
            lines.append(f"{len(lines) + 1} {rel}"); labs.append(f"{len(labs) + 1} {c + 1}")
    (cub / "images.txt").write_text("\n".join(lines) + "\n")
    (cub / "image_class_labels.txt").write_text("\n".join(labs) + "\n")


def write_cars(root: Path, classes=(1, 2, 75, 99, 150)):
    from scipy.io import savemat
    base = root / "cars196"
    rows = []
    for i, c in enumerate(classes):
        rel = f"car_ims/{i:06d}.jpg"
        _img(base / rel, value=20 * i)
        _img(base / "car_ims_masked" / f"{i:06d}.png", mode="L", value=200)
        rows.append((rel, c, 0))
    ann = np.array(rows, dtype=[("relative_im_path", "O"), ("class", "O"), ("test", "O")])
    savemat(base / "cars_annos.mat", {"annotations": ann})


def write_sop(root: Path):
    base = root / "Stanford_Online_Products"
    for fname, rows in (("Ebay_train.txt", [(1, 1, 1, "bicycle_final/a.JPG"), (2, 9000, 1, "bicycle_final/b.JPG")]),
                        ("Ebay_test.txt", [(1, 11319, 2, "chair_final/c.JPG")])):
        base.mkdir(parents=True, exist_ok=True)
        (base / fname).write_text("image_id class_id super_class_id path\n" +
                                  "".join(f"{a} {b} {c} {d}\n" for a, b, c, d in rows))
        for *_, p in rows:
            _img(base / p)
            _img((root / "SOP_masked" / p).with_suffix(".png"), mode="L", value=255)


def test_cub_loader_and_splits(tmp_path):
    write_cub(tmp_path, n_cls=4)
    ix = load_cub(tmp_path)
    assert len(ix) == 12 and ix.label.tolist()[:3] == [0, 0, 0] and set(ix.split) == {"train"}
    s, skipped = load_images(ix, size=8)
    assert s.X.shape == (12, 3, 8, 8) and s.M.shape == (12, 1, 8, 8) and skipped == 0
    assert s.M.min() == 1.0


def test_cars_loader_reads_the_mat_file(tmp_path):
    write_cars(tmp_path)
    ix = load_cars(tmp_path)
    assert ix.label.tolist() == [0, 1, 74, 98, 149]
    assert ix.split.tolist() == ["train", "train", "val", "test", "test"]


def test_sop_loader(tmp_path):
    write_sop(tmp_path)
    ix = load_sop(tmp_path)
    assert ix.split.tolist() == ["train", "val", "test"]
    assert ix.mask_path[0].endswith("SOP_masked/bicycle_final/a.png")


@pytest.mark.parametrize("writer,loader,missing", [
    (write_cub, load_cub, "cub2011/CUB_200_2011/images.txt"),
    (write_cub, load_cub, "cub2011/CUB_200_2011/image_class_labels.txt"),
    (write_cars, load_cars, "cars196/cars_annos.mat"),
    (write_sop, load_sop, "Stanford_Online_Products/Ebay_test.txt"),
])
def test_missing_metadata_file_is_named(tmp_path, writer, loader, missing):
    writer(tmp_path)
    (tmp_path / missing).unlink()
    with pytest.raises(DataError, match=Path(missing).name):
        loader(tmp_path)


def test_missing_mask_is_named(tmp_path):
    write_cub(tmp_path)
    (tmp_path / "cub2011" / "images_masked" / "b_1_2.png").unlink()
    with pytest.raises(DataError, match="b_1_2.png.*rembg"):
        load_cub(tmp_path)


def test_mask_of_wrong_size_names_the_image(tmp_path):
    write_cub(tmp_path)
    _img(tmp_path / "cub2011" / "images_masked" / "b_2_1.png", size=(5, 5), mode="L")
    with pytest.raises(DataError, match=r"b_2_1\.jpg is 12x10"):
        load_images(load_cub(tmp_path), size=8)


def test_undecodable_image_is_skipped_with_warning_and_counted(tmp_path):
    write_cub(tmp_path)
    bad = tmp_path / "cub2011" / "CUB_200_2011" / "images" / "002.Bird" / "b_1_0.jpg"
    bad.write_bytes(b"not a jpeg at all")
    with pytest.warns(UserWarning, match="b_1_0.jpg: cannot decode"):
        s, skipped = load_images(load_cub(tmp_path), size=8)
    assert skipped == 1 and len(s.y) == 11


def test_load_real_dataset_end_to_end(tmp_path):
    write_cub(tmp_path, classes=(0, 1, 80, 81, 150, 151), per=2)
    src, splits, skipped = load_real_dataset(tmp_path, "cub2011", size=8)
    assert src.kind == "real" and src.fingerprint.startswith("real-") and skipped == 0
    assert [len(splits[s].y) for s in ("train", "val", "test")] == [4, 4, 4]
    assert splits["test"].y.tolist() == [150, 150, 151, 151]
    with pytest.raises(DataError, match="no image in the val split"):
        write_cub(tmp_path / "only_train", n_cls=2)
        load_real_dataset(tmp_path / "only_train", "cub2011", size=8)
    with pytest.raises(ValueError, match="valid: cub2011, cars196, sop"):
        load_real_dataset(tmp_path, "inshop")


def test_background_folder(tmp_path):
    for i in range(3): _img(tmp_path / "val" / f"{i}.jpeg", size=(30, 20), value=50 * i)
    bank = load_background_folder(tmp_path / "val", size=16)
    assert bank.shape == (3, 3, 16, 16)
    with pytest.raises(DataError, match="no background photos"):
        load_background_folder(tmp_path / "test")


# --- hyper-parameters, published numbers, one cell --------------------------------------------------------------------

def test_paper_hparams_build_every_loss():
    for ds, per_loss in PAPER_HPARAMS.items():
        for loss, params in per_loss.items():
            assert type(make_loss(loss, num_classes=3, embedding_size=4, **params)).__name__ == LOSSES[loss]
    with pytest.raises(ValueError, match="valid losses: contrastive"):
        loss_distance("n_pairs")


def test_published_drops_match_the_spec():
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
              attr_samples=2, progress=False, dim=16)
    a = run_cell(d, "normalized_softmax", "bgaugment", "x", **kw)
    b = run_cell(d, "normalized_softmax", "bgaugment", "x", **kw)
    ta, tb = table1_rows([a]), table1_rows([b])
    pd.testing.assert_frame_equal(ta, tb)
    assert len(a.corrupted) == 2 and a.scores.shape == (5,)
    with pytest.raises(ValueError, match="valid: base, bgaugment"):
        run_cell(d, "triplet", "mixup", "x", **kw)


def test_run_cell_falls_back_to_pml_defaults_below_twice_random():
    d = make_digit_pairs(0.5, dict(train=4, val=3, test=3), seed=0)
    bank = torch.rand(10, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    kw = dict(test_corrupted=[d["test"].X], val_corrupted=d["val"].X, bank_train=bank, widths=(4, 8, 8), steps=2,
              val_every=2, n_attr=2, attr_samples=2, progress=False, dim=16, hparams=PAPER_HPARAMS["cub2011"]["triplet"])
    assert run_cell(d, "triplet", "base", "x", random_level=0.0, **kw).hparams == "paper values"
    assert run_cell(d, "triplet", "base", "x", random_level=1.0, **kw).hparams.startswith("PML defaults (fallback")
