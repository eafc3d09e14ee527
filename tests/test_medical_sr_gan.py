"""The real-data path of medical_sr_gan on tiny NIfTI volumes written here with nibabel (HR folder, split CSV,
ADNI-style index), every way we know the files break, and the claim rules and gates where they must pass and fail."""
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from paperlib.data import DataError
from paperlib.papers.medical_sr_gan import (
    load_real_data, FOLDER, read_nifti, check_affines, recovery_ratio, rule_sps_beats_plain, rule_asd_beats_sps,
    rule_asd_removes_seams, rule_beats_subjects, rule_auc_lower, gate_arms_differ, rule_auc_falls, rule_direction, gate_sr_learned, gate_clf_learned,
    PixelShuffle3d, RRDBNet3d, super_resolve, make_generator, train_sr, central_crop)

AFFINE = np.diag([1.4, 1.4, 1.4, 1.0])

def _vol(rng, shape=(12, 12, 10)):
    v = np.zeros(shape, np.float32)
    v[2:-2, 2:-2, 2:-2] = rng.random((shape[0] - 4, shape[1] - 4, shape[2] - 4)) + 0.5    # a "skull-stripped" brain
    return v

def _save(path: Path, data, affine=AFFINE):
    path.parent.mkdir(parents=True, exist_ok=True)
    nib.save(nib.Nifti1Image(np.asarray(data, np.float32), affine), str(path))

def write_tiny_dataset(data_root: Path) -> None:
    "Tiny HR volumes (3 train, 2 test), a split file and a 6-subject ADNI-style index, in the real layout."
    d = Path(data_root) / FOLDER
    rng = np.random.default_rng(0)
    subs = [f"sub-{i:02d}" for i in range(5)]
    for s in subs: _save(d / "sr_hr" / f"{s}.nii.gz", _vol(rng, (16, 16, 16)), np.diag([0.7, 0.7, 0.7, 1.0]))
    (d / "sr_split.csv").write_text("subject,split\n" + "".join(f"{s},{'train' if i < 3 else 'test'}\n" for i, s in enumerate(subs)))
    rows = []
    for i in range(6):
        _save(d / "adni" / "img" / f"a{i}.nii.gz", _vol(rng))
        rows.append(f"img/a{i}.nii.gz,{'AD' if i % 2 else 'CN'}\n")
    (d / "adni" / "index.csv").write_text("path,label\n" + "".join(rows))

def _root(tmp_path): return tmp_path / FOLDER

def _write(tmp_path, rel, text): (_root(tmp_path) / rel).write_text(text)

def _four_d(r):
    _save(_root(r) / "sr_hr" / "sub-01.nii.gz", np.zeros((8, 8, 8, 2)), np.diag([0.7, 0.7, 0.7, 1.0]))

def _shifted(r):
    A = AFFINE.copy(); A[0, 3] = 5.0
    _save(_root(r) / "adni" / "img" / "a3.nii.gz", _vol(np.random.default_rng(1)), A)

def _resized(r):
    _save(_root(r) / "adni" / "img" / "a2.nii.gz", _vol(np.random.default_rng(1)), np.diag([1.0, 1.0, 1.0, 1.0]))

def _bad_shape(r):
    _save(_root(r) / "adni" / "img" / "a4.nii.gz", _vol(np.random.default_rng(1), (12, 12, 12)))

def _not_nifti(r):
    (_root(r) / "adni" / "img" / "a1.nii.gz").write_bytes(b"not a nifti file")

# (name, how the tiny dataset is broken, what the error must say): the runner's bad-data checks read this list
BREAKAGES = [
    ("4-D volume", _four_d, "sub-01.nii.gz: a 3-D volume is required, but the image has shape (8, 8, 8, 2)"),
    ("shifted affine", _shifted, "a3.nii.gz: its affine differs from that of"),
    ("other voxel size", _resized, "a2.nii.gz: its affine differs"),
    ("other shape", _bad_shape, "a4.nii.gz: shape (12, 12, 12) differs"),
    ("unreadable NIfTI", _not_nifti, "a1.nii.gz: not a readable NIfTI file"),
    ("split names a missing subject", lambda r: _write(r, "sr_split.csv", "subject,split\nsub-00,train\nsub-09,test\n"),
     "row 3 (subject 'sub-09'): missing file"),
    ("bad split value", lambda r: _write(r, "sr_split.csv", "subject,split\nsub-00,train\nsub-01,validation\n"),
     "row 3 (subject 'sub-01'), column 'split': 'validation' is not one of the valid values (train, test)"),
    ("no test subject", lambda r: _write(r, "sr_split.csv", "subject,split\nsub-00,train\n"), "no subject in split 'test'"),
    ("bad label", lambda r: _write(r, "adni/index.csv", "path,label\nimg/a0.nii.gz,CN\nimg/a1.nii.gz,MCI\n"),
     "row 3 (path 'img/a1.nii.gz'), column 'label': 'MCI' is not one of the valid values (CN, AD)"),
    ("index names a missing file", lambda r: _write(r, "adni/index.csv", "path,label\nimg/a0.nii.gz,CN\nimg/zz.nii.gz,AD\n"),
     "row 3 (path 'img/zz.nii.gz'): missing file"),
    ("one class only", lambda r: _write(r, "adni/index.csv", "path,label\nimg/a0.nii.gz,CN\nimg/a1.nii.gz,CN\n"), "both labels CN and AD"),
    ("duplicate subject", lambda r: _write(r, "sr_split.csv", "subject,split\nsub-00,train\nsub-00,test\n"), "repeats row 2"),
    ("missing column", lambda r: _write(r, "adni/index.csv", "path\nimg/a0.nii.gz\n"), "missing column(s) ['label']"),
    ("empty split file", lambda r: _write(r, "sr_split.csv", ""), "is empty"),
]

def test_tiny_dataset_loads(tmp_path):
    write_tiny_dataset(tmp_path)
    src, d = load_real_data(_root(tmp_path))
    assert src.kind == "real" and src.fingerprint.startswith("real-")
    assert list(d["split"].split) == ["train"] * 3 + ["test"] * 2 and len(d["sr"]) == 5 and d["sr"][0].shape == (16, 16, 16)
    assert list(d["adni"].label) == ["CN", "AD"] * 3 and len(d["cohort"]) == 6
    assert np.allclose(d["sr_affine"], np.diag([0.7, 0.7, 0.7, 1.0]))

def test_bom_header_is_read(tmp_path):
    write_tiny_dataset(tmp_path)
    p = _root(tmp_path) / "sr_split.csv"
    p.write_text(p.read_text(), encoding="utf-8-sig")
    assert len(load_real_data(_root(tmp_path))[1]["split"]) == 5

@pytest.mark.parametrize("name,mutate,expected", BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_broken_data_is_named(tmp_path, name, mutate, expected):
    write_tiny_dataset(tmp_path)
    mutate(tmp_path)
    with pytest.raises(DataError) as e: load_real_data(_root(tmp_path))
    assert expected in str(e.value), str(e.value)

def test_affine_tolerance():
    A = np.eye(4)
    check_affines(["a", "b"], [A, A + 1e-5])                     # within tolerance
    with pytest.raises(DataError, match="b: its affine differs"): check_affines(["a", "b"], [A, A + 0.01])
    check_affines(["a", "b"], [A, A + 0.01], tol=0.1)

def test_real_volumes_go_through_the_sr_pipeline(tmp_path):
    "The tiny real HR volumes train each SR variant for a few steps and super-resolve a volume back to its HR shape."
    write_tiny_dataset(tmp_path)
    _, d = load_real_data(_root(tmp_path))
    vols = [(v / v.max(), v > 0) for v in d["sr"][:3]]
    cfg = dict(nf=4, gc=2, n_rrdb=1, patch_hr=8, patch_lr=4, per_volume=4, batch=2, iters=2, warm=1, plain_crop_lr=None)
    for variant in ("esrgan", "sps", "asd"):
        state, hist = train_sr(variant, vols, cfg, 0)
        G = make_generator(state, cfg)
        lr = d["sr"][3][::2, ::2, ::2]
        assert super_resolve(G, lr, None if variant == "esrgan" else 4).shape == (16, 16, 16)
        assert len(hist) == cfg["iters"] - cfg["warm"] and np.isfinite(hist.l1).all()      # the adversarial phase's rows

def test_recovery_ratio_reproduces_table3():
    assert round(100 * recovery_ratio(71.37, 70.46, 76.17), 2) == 15.94
    assert round(100 * recovery_ratio(60.87, 52.86, 70.46), 2) == 45.51

def test_pixel_shuffle_inverts_an_unshuffle():
    x = np.random.default_rng(0).random((1, 1, 4, 6, 2)).astype(np.float32)
    import torch
    t = torch.from_numpy(x)
    un = t.view(1, 1, 2, 2, 3, 2, 1, 2).permute(0, 1, 3, 5, 7, 2, 4, 6).reshape(1, 8, 2, 3, 1)
    assert torch.equal(PixelShuffle3d(2)(un), t)

def test_central_crop():
    v = np.arange(6 ** 3).reshape(6, 6, 6)
    assert central_crop(v, 2).shape == (2, 2, 2) and central_crop(v, 2)[0, 0, 0] == v[2, 2, 2]
    assert central_crop(v, None) is v

ELEVEN = np.arange(11.0)

@pytest.mark.parametrize("args,expected", [
    ((20 + ELEVEN, 15 + ELEVEN, 0.9 + 0 * ELEVEN, 0.8 - ELEVEN / 100), True),
    ((20 + ELEVEN, 15 + ELEVEN, 0.9 + 0 * ELEVEN, 0.95 + 0 * ELEVEN), False),
    ((np.r_[20 + ELEVEN[:8], 0, 0, 0], 15 + ELEVEN, 0.9 + 0 * ELEVEN, 0.8 + 0 * ELEVEN), False)])
def test_rule_c1(args, expected): assert rule_sps_beats_plain(*args) is expected

def test_rule_c2():
    assert rule_asd_beats_sps(0.9 + ELEVEN / 1000, 0.89 + 0 * ELEVEN) is True
    assert rule_asd_beats_sps(0.89 + 0 * ELEVEN, 0.9 + ELEVEN / 1000) is False

def test_rule_c3():
    assert rule_asd_removes_seams(1.3 + ELEVEN / 100, 1.0 + ELEVEN / 200) is True
    assert rule_asd_removes_seams(1.02 + ELEVEN / 1000, 1.0 + ELEVEN / 2000) is False
    assert rule_asd_removes_seams(1.3 + ELEVEN / 100, 1.4 + ELEVEN / 100) is False

def test_rules_c4_c6_direction_and_gates():
    n = np.arange(11.)
    assert rule_beats_subjects(0.9 + n / 100, 0.7 + n / 100)[0] and not rule_beats_subjects(0.6 + 0 * n, 0.7 + 0 * n)[0]
    assert rule_beats_subjects(0.7 + n, 0.7 + n)[0] is False                                  # a tie never passes
    assert rule_auc_lower(dict(diff=-0.1, lo=-0.2, hi=-0.01)) and not rule_auc_lower(dict(diff=-0.02, lo=-0.1, hi=0.05))
    assert gate_arms_differ([0.02, 0.012], [0.1, 0.1]) and not gate_arms_differ([0.005, 0.009], [0.1, 0.1])
    assert rule_auc_falls([(0.1, 0.02, 0.2), (0.15, 0.05, 0.3)]) and not rule_auc_falls([(0.1, 0.02, 0.2), (0.05, -0.01, 0.1)])
    assert rule_direction(0.1) and not rule_direction(0.0)
    assert gate_sr_learned([30, 31], [28, 29]) and not gate_sr_learned([27], [28])
    assert gate_clf_learned(0.8, 0.7) and not gate_clf_learned(0.8, 0.45) and not gate_clf_learned(0.6, 0.55)
