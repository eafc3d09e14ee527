"""Tests of the FEAT paper's real-data path: a tiny dataset written in the real layout (UTKFace file names, the FEAT
attribute folders, morph folders, pre-computed embeddings as .npy + index and as .csv), the analysis on it, and the
ways real files break (`write_tiny_dataset`, `BREAKAGES`). The method and the claim rules are tested in the notebook."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from paperlib.data import DataError
from paperlib.datasets import FEAT_FOLDER as FOLDER, ATTRIBUTE_TESTS, scan_utkface, skipped_note, parse_utkface
from paperlib.papers.feat_face_bias import (MODELS, CONCEPTS, load_real_data, real_cells, real_morph, rule_matches_paper,
                                            select_cells, B_CLAIMS)

RACES = {"EU": 0, "AF": 1, "AS": 2}
BAD_NAMES = ["holiday_photo.jpg", "26_1_9_20170116174525125.jpg", "26_1_2.jpg", "x_0_0_20170109150557335.jpg"]


def _img(path: Path, value: int):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((4, 4, 3), value % 256, np.uint8)).save(path)


def write_tiny_dataset(data_root: Path) -> None:
    """<data_root>/feat_face_bias/: 24 UTKFace crops (3 races x 2 genders x 2 ages x 2) and 4 badly named files, two
    attribute images per (test, attribute, group), morphs of 3 identities per level, and embeddings of two models:
    DeepFace as index.csv + DeepFace.npy (16-d), FaceNet as FaceNet.csv (8-d)."""
    root = Path(data_root) / FOLDER
    paths, k = [], 0
    for race, code in RACES.items():
        for gender in (0, 1):
            for age in (25, 70):
                for i in range(2):
                    p = f"utkface/{age}_{gender}_{code}_2017011617{k:07d}.jpg"; _img(root / p, k); paths.append(p); k += 1
    for name in BAD_NAMES: _img(root / "utkface" / name, 7)
    for test, groups in ATTRIBUTE_TESTS.items():
        concepts = CONCEPTS if test != "intersectional" else ("competent", "incompetent")
        for c in concepts:
            for g in groups:
                for i in range(2):
                    p = f"feat_attributes/{test}/{c}/{g}/{i}.jpg"; _img(root / p, k); paths.append(p); k += 1
    for src in ("EU", "AF"):
        for lvl in (0, 25, 50, 75, 100):
            for i in range(3):
                p = f"race_transform/{src}/{lvl}/id{i}.jpg"; _img(root / p, k); paths.append(p); k += 1
    rng = np.random.default_rng(0)
    (root / "embeddings").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(dict(path=paths)).to_csv(root / "embeddings/index.csv", index=False)
    np.save(root / "embeddings/DeepFace.npy", rng.normal(size=(len(paths), 16)))
    V = pd.DataFrame(rng.normal(size=(len(paths), 8)), columns=[f"e{i}" for i in range(8)])
    V.insert(0, "path", paths); V.to_csv(root / "embeddings/FaceNet.csv", index=False)


def _root(r): return Path(r) / FOLDER


def _rm_tree(rel):
    def f(r):
        import shutil
        shutil.rmtree(_root(r) / rel)
    return f


def _npy_rows(r):
    M = np.load(_root(r) / "embeddings/DeepFace.npy"); np.save(_root(r) / "embeddings/DeepFace.npy", M[:-1])


def _csv_and_npy(r):
    V = pd.read_csv(_root(r) / "embeddings/FaceNet.csv")
    np.save(_root(r) / "embeddings/FaceNet.npy", np.zeros((len(V), 5)))


def _csv_text(r):
    p = _root(r) / "embeddings/FaceNet.csv"
    lines = p.read_text().splitlines(); parts = lines[3].split(","); parts[2] = "abc"; lines[3] = ",".join(parts)
    p.write_text("\n".join(lines) + "\n")


def _dup_index(r):
    p = _root(r) / "embeddings/index.csv"
    lines = p.read_text().splitlines(); lines[2] = lines[1]; p.write_text("\n".join(lines) + "\n")


def _no_utk_names(r):
    import shutil
    for p in (_root(r) / "utkface").glob("*_*_*_*.jpg"): p.unlink()


# (name, how the tiny dataset is broken, what the error must say): the runner's bad-data checks read this list
BREAKAGES = [
    ("attribute folder missing a group", _rm_tree("feat_attributes/race/pleasant/AS"),
     "feat_attributes/race/pleasant has no images of group 'AS' (expected sub-folders EU, AF, AS)"),
    ("attribute folder missing", _rm_tree("feat_attributes/gender/likable"), "missing attribute folder"),
    ("embedding rows differ from the index", _npy_rows, "DeepFace.npy has shape (177, 16) but"),
    ("embedding dimensions differ between two files", _csv_and_npy, "embedding dimensions differ for FaceNet"),
    ("embedding value not a number", _csv_text, "FaceNet.csv, row 4, column 'e1': not a number"),
    ("duplicate path in the index", _dup_index, "repeats row 2"),
    ("morph level missing", _rm_tree("race_transform/AF/75"), "missing or empty morph folder"),
    ("no UTKFace name follows the convention", _no_utk_names, "no file follows the UTKFace name convention"),
    ("no embeddings", _rm_tree("embeddings"), "weights are never downloaded"),
]


def test_tiny_dataset_loads(tmp_path):
    write_tiny_dataset(tmp_path)
    src, data = load_real_data(_root(tmp_path))
    assert src.kind == "real" and src.params["utkface"] == 24 and src.params["skipped"] == len(BAD_NAMES)
    assert set(data["embeddings"]) == {"DeepFace", "FaceNet"} and data["embeddings"]["FaceNet"].shape[1] == 8
    assert len(data["morphs"]) == 30 and set(data["attributes"].group) >= {"EU", "M", "Old", "ASF"}
    assert "skipped 4 UTKFace file(s)" in src.description


def test_bad_utkface_names_are_skipped_counted_and_shown(tmp_path):
    write_tiny_dataset(tmp_path)
    utk, skipped = scan_utkface(_root(tmp_path) / "utkface")
    assert len(utk) == 24 and sorted(skipped) == sorted(BAD_NAMES)
    note = skipped_note(skipped)
    assert note.startswith("skipped 4 UTKFace file(s)") and "and 1 more" in note
    assert sum(n in note for n in BAD_NAMES) == 3
    assert parse_utkface("26_1_9_20170116174525125.jpg") is None      # race 9 does not exist


def test_analysis_runs_on_tiny_real_data(tmp_path):
    write_tiny_dataset(tmp_path)
    _, data = load_real_data(_root(tmp_path))
    rc = real_cells(data, None, 200, 30, 0)
    assert set(rc.model) == {"DeepFace", "FaceNet"} and len(rc) == 2 * 19
    assert rc.p_one.between(0, 1).all() and rc.p_strat.between(0, 1).all() and (rc.ci_low <= rc.ci_high).all()
    assert (rc[rc.pair == "EU/AF"].n_targets == 8).all() and (rc[rc.pair == "EUF/AFF"].n_targets == 4).all()
    ok, why = rule_matches_paper(select_cells(rc, B_CLAIMS["B1"][1]))
    assert ok is False and why                                          # random embeddings do not give the paper's cells
    ser, tt = real_morph(data, "FaceNet", "Career/Family", 200, 0)
    assert tt.level.tolist() == [0, 0.25, 0.5, 0.75, 1.0] and len(ser["X"][0]) == 3


def test_real_sampling_is_seeded_and_equal_sized(tmp_path):
    write_tiny_dataset(tmp_path)
    _, data = load_real_data(_root(tmp_path))
    a, b = real_cells(data, 3, 100, 10, 1), real_cells(data, 3, 100, 10, 1)
    pd.testing.assert_frame_equal(a, b)
    assert (a.n_targets <= 3).all()


@pytest.mark.parametrize("name,mutate,expected", BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_broken_data_is_named(tmp_path, name, mutate, expected):
    write_tiny_dataset(tmp_path)
    mutate(tmp_path)
    with pytest.raises(DataError) as e:
        load_real_data(_root(tmp_path))
    assert expected in str(e.value), str(e.value)
    if "shape" in expected or "dimensions" in expected:     # a mismatch names both files
        assert str(e.value).count("embeddings/") >= 2 or ("FaceNet.npy" in str(e.value) and "FaceNet.csv" in str(e.value))
