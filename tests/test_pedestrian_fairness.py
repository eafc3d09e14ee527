"""Tests of the pedestrian paper: its real-data path on tiny FA-INRIA, WSPD, Places365 and INRIA folders written in their
real layouts (`write_tiny_dataset`), the child-only flips on generated scenes, and the rules on detector outcomes whose
answer is known."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from paperlib.data import DataError
from paperlib.datasets import read_fa_inria, read_inria, read_wspd, write_tiny_fa_inria, write_tiny_inria, write_tiny_places, write_tiny_wspd
from paperlib.papers.pedestrian_fairness import (
    boxes_of, child_flip, disparity_moved, fa_inria_splits, ground_truth, mr_by_group, mr_lowered, real_scenes, scene_set)


def write_tiny_dataset(data_root: Path) -> None:
    "FA-INRIA (8 photos, 25 boxes, 5 children), WSPD (a 4-photo COCO file), Places365 (4 photos) and INRIA Person (6 photos)."
    root = Path(data_root)
    write_tiny_fa_inria(root / "fa_inria")
    write_tiny_wspd(root / "wspd")
    write_tiny_places(root / "places365", per_scene=2)
    write_tiny_inria(root / "inria")


def test_real_path_scales_boxes_and_keeps_ages(tmp_path):
    write_tiny_dataset(tmp_path)
    fa = read_fa_inria(tmp_path / "fa_inria")
    sp = fa_inria_splits(fa, seed=0)
    assert {len(sp[k].image.unique()) for k in ("train", "val", "test")} == {5, 1, 2}     # the file's own val split kept
    sc = real_scenes(sp["train"], 48, "fa_train")
    assert sc.images.shape == (5, 48, 48, 3) and sc.images.dtype == np.uint8
    gt = ground_truth(sc)
    assert (gt.age == "child").sum() == (sp["train"].age == "child").sum()
    w, h = fa.width.iloc[0], fa.height.iloc[0]                                         # every tiny photo is 64 x 72
    assert gt.x2.max() <= 48 and gt.y2.max() <= 48
    assert gt.x1.iloc[0] == pytest.approx(sp["train"].x1.iloc[0] * 48 / w)
    assert gt.y2.iloc[0] == pytest.approx(sp["train"].y2.iloc[0] * 48 / h)


def test_photos_without_people_are_kept_without_boxes(tmp_path):
    write_tiny_dataset(tmp_path)
    w = read_wspd(tmp_path / "wspd")
    sc = real_scenes(w, 32, "wspd")
    assert len(sc.images) == 4 and [len(b) for b in boxes_of(sc)] == [2, 1, 1, 0]
    neg = read_inria(tmp_path / "inria").query("x1 != x1")
    assert len(real_scenes(neg, 32, "inria").images) == len(neg) and real_scenes(neg, 32, "inria").boxes.empty


def test_a_bad_age_is_named_by_row_and_column(tmp_path):
    write_tiny_dataset(tmp_path)
    p = tmp_path / "fa_inria" / "boxes.csv"
    p.write_text(p.read_text().replace(",child", ",teen", 1))
    with pytest.raises(DataError, match=r"boxes\.csv, row \d+.*column 'age': 'teen'.*adult, child"):
        read_fa_inria(tmp_path / "fa_inria")


def test_child_flips_copy_the_adults_they_say():
    sc = scene_set("fa_train", 60, 96, seed=3)
    b = sc.boxes[sc.boxes.labelled]
    with_child = b[b.image.isin(b[b.age == "child"].image)]
    for v, adults in (("a", (with_child.age == "adult").sum()), ("b", (with_child.age == "adult").sum()), ("c", 0)):
        imgs, boxes, copied = child_flip(sc, v)
        assert len(imgs) == with_child.image.nunique() and copied == adults
        assert sum(len(x) for x in boxes) == (len(with_child) if v != "c" else (with_child.age == "child").sum())


def test_rules_see_an_improvement_and_not_a_tie():
    rng = np.random.default_rng(0)
    child = rng.random(4000) < 0.25
    base = rng.random(4000) < np.where(child, 0.35, 0.15)
    better = base & (rng.random(4000) > np.where(child, 0.5, 0.2))          # the new model finds some of the boxes missed
    image = np.arange(4000) // 4
    assert mr_lowered(base, better, child).passed
    assert not mr_lowered(base, base, child).passed                         # a tie passes neither way
    assert disparity_moved(base, better, child, image, "lower", B=500).passed
    assert not disparity_moved(base, base, child, image, "lower", B=500).passed
    m = mr_by_group(better, child)
    assert m["std"] == pytest.approx(abs(m["adult"] - m["child"]) / 2)
