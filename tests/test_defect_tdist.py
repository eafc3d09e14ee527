"""The real-data path of defect_tdist (DAGM 2007, PCB, a plain images/ + masks/ folder) on tiny datasets written in the
real layouts, the ways real files break, and the claim rules on constructed numbers."""
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from paperlib.data import DataError
from paperlib.datasets import DAGM_FOLDER, PCB_FOLDER, PLAIN_FOLDER, load_dagm, load_pcb, load_plain, read_voc_boxes
from paperlib.papers.defect_tdist import (
    SYNTH_TYPES, load_real_data,
    labelled_subset, label_pixel_ratios, ratio_stats, make_synth, k_eq5, k_eq3, gate_learned, gate_step1, gate_control,
    rule_beats, rule_low_label, rule_near_full, rule_step2_largest, rule_increasing, rule_kl_ap, adjust_nu,
    step1_ok, on_seeds, share_gap, gate_arms_differ, gate_ma_used, rule_ablation,
    moving_average_threshold, rule_ap_beats, image_records, pooled_ap)
from paperlib.segment import detection_metrics

SIDE = 64

def _ellipse(cy, cx, ry, rx, side=SIDE):
    yy, xx = np.mgrid[0:side, 0:side]
    return ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1

def _image(rng, mask=None, side=SIDE):
    a = rng.normal(128, 12, (side, side))
    if mask is not None: a[mask] += 70
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))

def _save_mask(m, path): Image.fromarray((np.asarray(m) * 255).astype(np.uint8)).save(path)

def _write_dagm(root: Path, rng):
    for split, n in (("Train", 8), ("Test", 3)):
        d = root / DAGM_FOLDER / "Class8" / split
        (d / "Label").mkdir(parents=True, exist_ok=True)
        lines = ["1"]
        for i in range(1, n + 2):
            name = f"{i:04d}.PNG"
            if i == n + 1:                                      # one defect-free image: listed, not used
                _image(rng).save(d / name); lines.append(f"{i}\t0\t{name}\t0\t"); continue
            m = _ellipse(*rng.integers(12, 52, 2), *rng.integers(3, 6, 2))
            _image(rng, m).save(d / name); _save_mask(m, d / "Label" / f"{i:04d}_label.PNG")
            lines.append(f"{i}\t1\t{name}\t0\t{i:04d}_label.PNG")
        (d / "Label" / "Labels.txt").write_text("\n".join(lines) + "\n")

def _voc(name, W, H, boxes):
    objs = "".join(f"<object><name>missing_hole</name><bndbox><xmin>{a}</xmin><ymin>{b}</ymin><xmax>{c}</xmax>"
                   f"<ymax>{d}</ymax></bndbox></object>" for a, b, c, d in boxes)
    return f"<annotation><filename>{name}</filename><size><width>{W}</width><height>{H}</height><depth>3</depth></size>{objs}</annotation>"

def _write_pcb(root: Path, rng):
    idir, adir = root / PCB_FOLDER / "images" / "Missing_hole", root / PCB_FOLDER / "Annotations" / "Missing_hole"
    idir.mkdir(parents=True, exist_ok=True); adir.mkdir(parents=True, exist_ok=True)
    for i in range(1, 7):
        boxes = [(8, 8, 15, 14), (40, 36, 47, 45)]
        m = np.zeros((SIDE, SIDE), bool)
        for a, b, c, d in boxes: m[b:d + 1, a:c + 1] = True
        _image(rng, m).convert("RGB").save(idir / f"01_missing_hole_{i:02d}.jpg", quality=95)
        (adir / f"01_missing_hole_{i:02d}.xml").write_text(_voc(f"01_missing_hole_{i:02d}.jpg", SIDE, SIDE, boxes))

def _write_plain(root: Path, rng):
    d = root / PLAIN_FOLDER
    (d / "images").mkdir(parents=True, exist_ok=True); (d / "masks").mkdir(parents=True, exist_ok=True)
    rows = ["image,split"]
    for i in range(11):
        m = _ellipse(*rng.integers(12, 52, 2), 3, 4) | _ellipse(*rng.integers(12, 52, 2), 2, 2)
        _image(rng, m).save(d / "images" / f"w{i:02d}.png"); _save_mask(m, d / "masks" / f"w{i:02d}.png")
        rows.append(f"w{i:02d}.png,{'train' if i < 8 else 'test'}")
    (d / "split.csv").write_text("\n".join(rows) + "\n")

def write_tiny_dataset(data_root: Path) -> None:
    "DAGM2007/Class8 (8 train / 3 test defective images), PCB_DATASET/Missing_hole (6 images), small_defects (8 / 3)."
    rng = np.random.default_rng(0)
    _write_dagm(Path(data_root), rng); _write_pcb(Path(data_root), rng); _write_plain(Path(data_root), rng)

LABELS = lambda r: Path(r) / DAGM_FOLDER / "Class8" / "Train" / "Label" / "Labels.txt"
XML = lambda r: Path(r) / PCB_FOLDER / "Annotations" / "Missing_hole" / "01_missing_hole_02.xml"
SPLIT = lambda r: Path(r) / PLAIN_FOLDER / "split.csv"

def _edit(path_of, old, new):
    def mutate(r):
        p = path_of(r); t = p.read_text()
        assert old in t, (old, t[:200])
        p.write_text(t.replace(old, new, 1))
    return mutate

def _small_mask(r):
    _save_mask(np.zeros((16, 16), bool), Path(r) / DAGM_FOLDER / "Class8" / "Train" / "Label" / "0002_label.PNG")

def _small_plain_mask(r): _save_mask(np.zeros((16, 16), bool), Path(r) / PLAIN_FOLDER / "masks" / "w03.png")

# (name, how the tiny dataset is broken, what the error must say): the runner's bad-data checks read this list
BREAKAGES = [
    ("DAGM bad number", _edit(LABELS, "2\t1\t0002.PNG", "2\tx\t0002.PNG"), "Labels.txt, row 3, column 'defective': 'x' is not a valid int"),
    ("DAGM flag not 0/1", _edit(LABELS, "2\t1\t0002.PNG", "2\t2\t0002.PNG"), "row 3, column 'defective': '2' is not one of the valid values"),
    ("DAGM missing image", lambda r: (Path(r) / DAGM_FOLDER / "Class8" / "Train" / "0003.PNG").unlink(),
     "Labels.txt, row 4, column 'image': missing image file"),
    ("DAGM missing label image", lambda r: (Path(r) / DAGM_FOLDER / "Class8" / "Train" / "Label" / "0004_label.PNG").unlink(),
     "Labels.txt, row 5, column 'label': missing label file"),
    ("DAGM label without a name", _edit(LABELS, "0\t0005_label.PNG", "0\t"), "row 6, column 'label': defective image 0005.PNG names no label image"),
    ("DAGM duplicate image", _edit(LABELS, "3\t1\t0003.PNG", "3\t1\t0002.PNG"), "Labels.txt, row 4, column 'image': '0002.PNG' repeats row 3"),
    ("DAGM wrong field count", _edit(LABELS, "2\t1\t0002.PNG\t0\t0002_label.PNG", "2\t1\t0002.PNG"), "Labels.txt, row 3: 3 fields, but the format has 5"),
    ("DAGM empty Labels.txt", lambda r: LABELS(r).write_text(""), "Labels.txt is empty"),
    ("DAGM mask of another size", _small_mask, "0002_label.PNG is 16x16 pixels but its image"),
    ("PCB not XML", lambda r: XML(r).write_text("<annotation><size>"), "01_missing_hole_02.xml: not valid XML"),
    ("PCB bad number", _edit(XML, "<xmin>40</xmin>", "<xmin>4O</xmin>"), "01_missing_hole_02.xml, object 2, <xmin>: '4O' is not a number"),
    ("PCB inverted box", _edit(XML, "<xmax>15</xmax>", "<xmax>5</xmax>"), "01_missing_hole_02.xml, object 1: box (8, 8, 5, 14) has xmax < xmin"),
    ("PCB size disagrees", _edit(XML, "<width>64</width>", "<width>640</width>"), "01_missing_hole_02.xml: <size> says 640x64 pixels"),
    ("PCB image missing", lambda r: (Path(r) / PCB_FOLDER / "images" / "Missing_hole" / "01_missing_hole_03.jpg").unlink(),
     "01_missing_hole_03.xml: no image 01_missing_hole_03.jpg"),
    ("plain bad split", _edit(SPLIT, "w02.png,train", "w02.png,val"), "split.csv, row 4 (image 'w02.png'), column 'split': 'val' is not one of the valid values"),
    ("plain missing column", lambda r: SPLIT(r).write_text("image\nw00.png\n"), "split.csv: missing column(s) ['split']"),
    ("plain duplicate image", _edit(SPLIT, "w03.png,train", "w02.png,train"), "split.csv, row 5 (image 'w02.png'), column 'image': 'w02.png' repeats row 4"),
    ("plain missing mask", lambda r: (Path(r) / PLAIN_FOLDER / "masks" / "w01.png").unlink(), "split.csv, row 3: missing mask"),
    ("plain mask of another size", _small_plain_mask, "w03.png is 16x16 pixels but its image"),
    ("plain unreadable image", lambda r: (Path(r) / PLAIN_FOLDER / "images" / "w04.png").write_bytes(b"not a png"), "w04.png: not a readable image"),
    ("plain not UTF-8", lambda r: SPLIT(r).write_bytes("image,split\nw00.png,train\nw\xe9.png,train\n".encode("latin-1")), "split.csv, row 3: not UTF-8 text"),
    ("plain empty split file", lambda r: SPLIT(r).write_text(""), "split.csv is empty"),
]

def test_tiny_dataset_loads(tmp_path):
    write_tiny_dataset(tmp_path)
    src, types = load_real_data(tmp_path, 32)
    assert src.kind == "real" and src.fingerprint.startswith("real-")
    assert list(types) == ["Dagm-1", "missing hole", "WIS-like"]
    X, Y = types["Dagm-1"]["train"]
    assert X.shape == (8, 32, 32) and Y.shape == (8, 32, 32) and Y.dtype == np.uint8 and (Y.reshape(8, -1).max(1) == 1).all()
    assert len(types["Dagm-1"]["test"][0]) == 3                                   # the defect-free image is left out
    assert [len(types["missing hole"][s][0]) for s in ("train", "test")] == [5, 1]
    assert [len(types["WIS-like"][s][0]) for s in ("train", "test")] == [8, 3]
    assert (label_pixel_ratios(types["missing hole"]["train"][1]) > 0).all()

def test_fingerprint_follows_the_images(tmp_path):
    write_tiny_dataset(tmp_path)
    fp = load_real_data(tmp_path, 32)[0].fingerprint
    img = tmp_path / PLAIN_FOLDER / "images" / "w00.png"
    a = np.asarray(Image.open(img)).copy(); a[0, 0] ^= 1; Image.fromarray(a).save(img)
    assert load_real_data(tmp_path, 32)[0].fingerprint != fp

def test_bom_header_is_read(tmp_path):
    write_tiny_dataset(tmp_path)
    SPLIT(tmp_path).write_text(SPLIT(tmp_path).read_text(), encoding="utf-8-sig")
    assert len(load_plain(tmp_path / PLAIN_FOLDER, 32)[0]["WIS-like"]["train"][0]) == 8

def test_dagm_without_count_line(tmp_path):
    write_tiny_dataset(tmp_path)
    p = LABELS(tmp_path); p.write_text(p.read_text().split("\n", 1)[1])
    assert len(load_dagm(tmp_path / DAGM_FOLDER, 32)[0]["Dagm-1"]["train"][0]) == 8

def test_pcb_box_outside_is_clipped_with_a_counted_warning(tmp_path):
    write_tiny_dataset(tmp_path)
    _edit(XML, "<xmax>47</xmax>", "<xmax>70</xmax>")(tmp_path)
    _edit(lambda r: Path(r) / PCB_FOLDER / "Annotations" / "Missing_hole" / "01_missing_hole_04.xml", "<ymin>8</ymin>", "<ymin>-3</ymin>")(tmp_path)
    with pytest.warns(UserWarning, match=r"2 PCB box\(es\) reached outside their image and were clipped"):
        load_pcb(tmp_path / PCB_FOLDER, 32)
    (W, H), boxes, clipped = read_voc_boxes(XML(tmp_path))
    assert (W, H) == (64, 64) and boxes[1] == (40, 36, 63, 45) and clipped == 1

def test_empty_labelled_set_is_refused(tmp_path):
    with pytest.raises(DataError, match=r"blob/brick: a labelled fraction of 2% of 12 training images is 0.24 images, which rounds to 0"):
        labelled_subset(12, 0.02, 0, "blob/brick")
    assert len(labelled_subset(120, 0.02, 0)) == 2
    with pytest.raises(DataError, match="needs at least 2"):
        ratio_stats(label_pixel_ratios(make_synth(SYNTH_TYPES["blob/brick"], 1, 48, 0, "train")["Y"]))

@pytest.mark.parametrize("name,mutate,expected", BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_broken_data_is_named(tmp_path, name, mutate, expected):
    write_tiny_dataset(tmp_path)
    mutate(tmp_path)
    with pytest.raises(DataError) as e: load_real_data(tmp_path, 32)
    assert expected in str(e.value), str(e.value)

def test_generator_seeds_differ_by_type_and_split():
    t = SYNTH_TYPES["blob/brick"]
    a = make_synth(t, 4, 48, 0, "train")
    assert np.array_equal(a["X"], make_synth(t, 4, 48, 0, "train")["X"])
    assert not np.array_equal(a["Y"], make_synth(t, 4, 48, 0, "test")["Y"])
    assert not np.array_equal(a["Y"], make_synth(SYNTH_TYPES["blob/grass"], 4, 48, 0, "train")["Y"])
    assert not np.array_equal(a["Y"], make_synth(t, 4, 48, 1, "train")["Y"])

def test_threshold_formulas():
    assert k_eq3(1000, 0.02) == 20
    assert k_eq5(10000, 0.01, 0.005, 10, 0.99) > k_eq5(10000, 0.01, 0.005, 10, 0.6) > k_eq3(10000, 0.01)
    assert k_eq5(10000, 0.01, 0.005, 10, 0.9) > k_eq5(10000, 0.01, 0.005, 10, 0.9, dist="normal")
    assert moving_average_threshold([0.2, 0.4, 0.6]) == pytest.approx(0.46)
    ev = lambda p, r, f: dict(precision=p, recall=r, f1=f)
    assert adjust_nu(ev(0.8, 0.8, 0.8), ev(0.9, 0.6, 0.7)) == 1.1 and adjust_nu(ev(0.8, 0.6, 0.7), ev(0.7, 0.8, 0.75)) == 0.9

# every rule once where it must hold and once where it must fail
_GOOD = [(np.array([0.9]), np.array([True]), 1)] * 40                       # finds every defect
_POOR = [(np.array([0.9]), np.array([True]), 1), (np.array([]), np.array([], bool), 1)] * 20   # misses half

RULES = [
    ("gate learned", lambda: gate_learned([0.9, 0.85], [0.3, 0.3]), lambda: gate_learned([0.9, 0.75], [0.3, 0.3])),
    ("gate learned margin", lambda: gate_learned([0.9], [0.69]), lambda: gate_learned([0.9], [0.71])),
    ("gate step1", lambda: gate_step1([0.55, 0.4]), lambda: gate_step1([0.45, 0.4])),
    ("step1 per seed", lambda: step1_ok({7: 0.5})[7], lambda: step1_ok({7: 0.49})[7]),
    ("arms differ (C6-C8 headroom)", lambda: gate_arms_differ({1: 0.12, 2: 0.1}), lambda: gate_arms_differ({1: 0.12, 2: 0.06})),
    ("MA used (C9 headroom)", lambda: gate_ma_used({1: 1, 2: 0}, [0.2, 0.1]), lambda: gate_ma_used({1: 0, 2: 0}, [0.2, 0.1])),
    ("ablation beats (C6-C9)", lambda: rule_ablation({1: 0.8, 2: 0.7, 3: 0.75}, {1: 0.7, 2: 0.62, 3: 0.66})["passed"],
     lambda: rule_ablation({1: 0.8, 2: 0.7, 3: 0.75}, {1: 0.7, 2: 0.72, 3: 0.66})["passed"]),
    ("gate control", lambda: gate_control([0.74], [0.70]), lambda: gate_control([0.76], [0.70])),
    ("beats", lambda: rule_beats(0.51, 0.5), lambda: rule_beats(0.5, 0.51)),
    ("AP beats over test images (C3)", lambda: rule_ap_beats(_GOOD, _POOR)["passed"], lambda: rule_ap_beats(_GOOD, _GOOD)["passed"]),
    ("low label (C2/C3)", lambda: rule_low_label({0.05: 0.6, 0.1: 0.7}, {0.05: 0.5, 0.1: 0.6}, (0.05, 0.1)),
     lambda: rule_low_label({0.05: 0.6, 0.1: 0.59}, {0.05: 0.5, 0.1: 0.6}, (0.05, 0.1))),
    ("near full (C1)", lambda: rule_near_full(0.91, 0.95), lambda: rule_near_full(0.89, 0.95)),
    ("step 2 largest (C5)", lambda: rule_step2_largest({0.05: 0.4, 0.2: 0.7}, {0.05: 0.7, 0.2: 0.8}, {0.05: 0.75, 0.2: 0.82}, 0.05, 0.2),
     lambda: rule_step2_largest({0.05: 0.4, 0.2: 0.7}, {0.05: 0.5, 0.2: 0.9}, {0.05: 0.55, 0.2: 0.92}, 0.05, 0.2)),
    ("ordering (C4)", lambda: rule_increasing([0.1, 0.5, 0.7]), lambda: rule_increasing([0.1, 0.7, 0.5])),
    ("KL vs AP (C10)", lambda: rule_kl_ap([0.1, 0.4, 1.0, 2.0], [0.9, 0.8, 0.5, 0.3]), lambda: rule_kl_ap([0.1, 0.4, 1.0, 2.0], [0.3, 0.5, 0.8, 0.9])),
    ("KL vs AP, p < 0.05 (C10)", lambda: rule_kl_ap([0.1, 0.5, 1, 2, 3], [0.9, 0.8, 0.6, 0.3, 0.1], alpha=0.05),
     lambda: rule_kl_ap([0.1, 0.5, 1, 2, 3], [0.8, 0.9, 0.6, 0.7, 0.5], alpha=0.05)),     # rho -0.8 but p = 0.052
]

@pytest.mark.parametrize("name,holds,fails", RULES, ids=[r[0] for r in RULES])
def test_rules(name, holds, fails):
    assert holds() is True and fails() is False


def test_identical_arms_are_not_a_win_and_decided_seeds_are_kept():
    same = {1: 0.56, 2: 0.61, 3: 0.7}
    assert rule_ablation(same, same)["passed"] is False                 # a tie never passes
    assert rule_ablation({1: 0.8}, {1: 0.5})["passed"] is None          # one seed: no interval
    assert on_seeds({1: True, 2: False, 3: True}, {1: True, 2: False, 3: False}) == {1: True}
    assert share_gap([0.02, 0.03], [0.02, 0.03], 0.01) == 0.0


def test_c3_image_bootstrap():
    "C3's cell rule: the pooled AP of the image records is the metric's AP, and one image of forty apart is no evidence."
    P = np.zeros((3, 12, 12)); G = np.zeros((3, 12, 12), np.uint8); G[:, 2:5, 2:5] = 1
    P[0, 2:5, 2:5] = 0.9; P[1, 8:10, 8:10] = 0.7; P[2, 2:5, 2:5] = 0.6
    assert pooled_ap(image_records(P, G, 0.5)) == pytest.approx(detection_metrics(P, G, 0.5)["ap"], abs=1e-12)
    near = list(_GOOD); near[0] = (np.array([]), np.array([], bool), 1)
    assert rule_ap_beats(_GOOD, near)["passed"] is False and rule_ap_beats(_POOR, _GOOD)["passed"] is False
    with pytest.raises(ValueError): rule_ap_beats(_GOOD, _GOOD[:3])

def test_learned_margin_and_step1_trainer_knob():
    from paperlib.papers.defect_tdist import learned_margin, Budget, train_step1, MAIN_TYPE
    # the margin is negative exactly when the learned gate fails (at the level, and against the untrained detector)
    assert learned_margin([0.9, 0.85], 0.3) == pytest.approx(0.05) and gate_learned([0.9, 0.85], [0.3, 0.3])
    assert learned_margin([0.9, 0.85], 0.7) == pytest.approx(-0.05) and not gate_learned([0.9, 0.85], [0.7, 0.7])
    assert learned_margin([0.9, 0.79], 0.3) < 0 and not gate_learned([0.9, 0.79], [0.3, 0.3])
    with pytest.raises(ValueError, match="trainer='adam'.*'paper', 'paperlib'"): Budget(trainer="adam")
    with pytest.raises(ValueError, match="range_steps=0"): Budget(range_steps=0)
    d = make_synth(SYNTH_TYPES[MAIN_TYPE], 4, 32, 0, "train")
    m = train_step1(d["X"], d["Y"], Budget(batch=4, trainer="paperlib", range_steps=10), 0, steps=6)
    assert m.step1_log["trainer"] == "paperlib" and m.step1_log["lr"] > 0 and len(m.step1_log["curve"]) == 6
