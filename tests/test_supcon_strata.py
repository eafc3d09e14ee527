"The real-data path of supcon_strata: tiny CIFAR-10/100 pickles, MNIST IDX files and a Waterbirds folder written in their real layouts, and the ways real files break."
import gzip, os, pickle, struct
from pathlib import Path

import numpy as np
import pytest

from paperlib.data import DataError
from paperlib.papers.supcon_strata import (real_sets, load_cifar10, load_cifar100, load_mnist, load_waterbirds, safe_unpickle,
                                           read_idx, WATERBIRDS_FOLDER, CIFAR10_FILES)

CIFAR10_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def _pickle(path, obj):
    with open(path, "wb") as f: pickle.dump(obj, f, protocol=2)


def _cifar_batch(rng, labels, key="labels"):
    return {b"batch_label": b"tiny", key.encode(): list(map(int, labels)),
            b"data": rng.integers(0, 256, (len(labels), 3072), dtype=np.uint8), b"filenames": [b"x.png"] * len(labels)}


def _idx(path, arr):
    arr = np.asarray(arr, np.uint8)
    head = struct.pack(">HBB", 0, 8, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    with gzip.open(path, "wb") as f: f.write(head + arr.tobytes())


def write_tiny_dataset(data_root: Path) -> None:
    "CIFAR-10, CIFAR-100, MNIST and Waterbirds, a few images each, in their real layouts under data_root."
    from PIL import Image
    root, rng = Path(data_root), np.random.default_rng(0)
    c10 = root / "cifar-10-batches-py"; c10.mkdir(parents=True, exist_ok=True)
    for i in range(1, 6): _pickle(c10 / f"data_batch_{i}", _cifar_batch(rng, np.repeat(np.arange(10), 2)))
    _pickle(c10 / "test_batch", _cifar_batch(rng, np.repeat(np.arange(10), 2)))
    _pickle(c10 / "batches.meta", {b"label_names": [n.encode() for n in CIFAR10_NAMES], b"num_cases_per_batch": 20})
    c100 = root / "cifar-100-python"; c100.mkdir(parents=True, exist_ok=True)
    fine = np.repeat(np.arange(100), 4)
    for split, f in (("train", fine), ("test", np.arange(100))):
        d = _cifar_batch(rng, f, "fine_labels"); d[b"coarse_labels"] = list(map(int, np.asarray(f) // 5))
        _pickle(c100 / split, d)
    _pickle(c100 / "meta", {b"fine_label_names": [f"f{i}".encode() for i in range(100)], b"coarse_label_names": [f"c{i}".encode() for i in range(20)]})
    raw = root / "MNIST" / "raw"; raw.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", 40), ("t10k", 20)):
        _idx(raw / f"{split}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28)))
        _idx(raw / f"{split}-labels-idx1-ubyte.gz", np.arange(n) % 10)
    wb = root / WATERBIRDS_FOLDER; (wb / "001.bird").mkdir(parents=True, exist_ok=True)
    rows = ["img_id,img_filename,y,split,place,place_filename"]
    for i in range(16):
        name = f"001.bird/img_{i}.jpg"
        Image.fromarray(rng.integers(0, 256, (12, 12, 3), dtype=np.uint8)).save(wb / name)
        rows.append(f"{i + 1},{name},{i % 2},{0 if i < 8 else 2},{(i // 2) % 2},/x/y.jpg")
    (wb / "metadata.csv").write_text("\n".join(rows) + "\n")


def _rewrite_meta(r, drop):
    p = Path(r) / WATERBIRDS_FOLDER / "metadata.csv"
    lines = [l.split(",") for l in p.read_text().splitlines()]
    k = lines[0].index(drop)
    p.write_text("\n".join(",".join(v for j, v in enumerate(l) if j != k) for l in lines) + "\n")


def _set_y(r, value):
    p = Path(r) / WATERBIRDS_FOLDER / "metadata.csv"
    lines = p.read_text().splitlines()
    f = lines[1].split(","); f[2] = value; lines[1] = ",".join(f)
    p.write_text("\n".join(lines) + "\n")


class _Evil:
    def __reduce__(self): return (os.system, ("echo unpickled",))


def _bad_shape(r):
    _pickle(Path(r) / "cifar-10-batches-py" / "data_batch_1", {b"labels": [0, 1], b"data": np.zeros((2, 100), np.uint8)})


def _bad_magic(r):
    with gzip.open(Path(r) / "MNIST" / "raw" / "train-labels-idx1-ubyte.gz", "wb") as f: f.write(b"\x12\x34\x08\x01" + b"\x00" * 8)


def _drop_key(r):
    p = Path(r) / "cifar-100-python" / "train"
    d = pickle.load(open(p, "rb")); d.pop(b"coarse_labels"); _pickle(p, d)


# (name, how the tiny dataset is broken, what the error must say): the runner's bad-data checks read this list
BREAKAGES = [
    ("cifar10 batches.meta missing", lambda r: (Path(r) / "cifar-10-batches-py" / "batches.meta").unlink(), "cifar-10-batches-py/batches.meta is missing"),
    ("cifar10 images of the wrong size", _bad_shape, "data_batch_1: 'data' must be N x 3072 bytes"),
    ("cifar10 pickle naming a function", lambda r: _pickle(Path(r) / "cifar-10-batches-py" / "test_batch", {b"data": _Evil()}), "test_batch: refusing to unpickle"),
    ("cifar100 coarse labels missing", _drop_key, "cifar-100-python/train: no 'coarse_labels' entry"),
    ("mnist labels file missing", lambda r: (Path(r) / "MNIST" / "raw" / "t10k-labels-idx1-ubyte.gz").unlink(), "t10k-labels-idx1-ubyte (or t10k-labels-idx1-ubyte.gz) is missing"),
    ("mnist bad magic", _bad_magic, "train-labels-idx1-ubyte.gz: not an unsigned-byte IDX file"),
    ("waterbirds column missing", lambda r: _rewrite_meta(r, "place"), "metadata.csv: missing column(s) ['place']"),
    ("waterbirds bad label", lambda r: _set_y(r, "2"), "column 'y'"),
    ("waterbirds image missing", lambda r: (Path(r) / WATERBIRDS_FOLDER / "001.bird" / "img_3.jpg").unlink(), "missing file"),
]


def test_tiny_dataset_loads(tmp_path):
    write_tiny_dataset(tmp_path)
    sets, srcs = real_sets(tmp_path, None, None, 0)
    assert set(sets) == {"CIFAR10-Coarse", "CIFAR10", "CIFAR100-Coarse", "CIFAR100-Coarse-U", "MNIST-Coarse", "Waterbirds"}
    assert len(srcs) == 4 and all(s.kind == "real" and s.fingerprint for s in srcs)
    c = sets["CIFAR10-Coarse"]
    assert c.X_tr.shape == (100, 3, 32, 32) and float(c.X_tr.max()) <= 1.0
    names = np.array(CIFAR10_NAMES)
    assert (c.y_tr == np.isin(names[c.z_tr], ["airplane", "automobile", "ship", "truck"])).all()
    u = sets["CIFAR100-Coarse-U"]
    assert (u.z_tr // 5 == u.y_tr).all() and len(u.y_tr) < len(sets["CIFAR100-Coarse"].y_tr)
    m = sets["MNIST-Coarse"]
    assert m.X_tr.shape == (40, 1, 28, 28) and (m.y_tr == (m.z_tr >= 5)).all()
    w = sets["Waterbirds"]
    assert w.X_tr.shape == (8, 3, 32, 32) and set(w.z_tr) <= {0, 1, 2, 3} and (w.z_tr // 2 == w.y_tr).all()


def test_loaders_read_the_values(tmp_path):
    write_tiny_dataset(tmp_path)
    d = load_cifar10(tmp_path / "cifar-10-batches-py")
    assert d["names"] == CIFAR10_NAMES and d["train"][0].dtype == np.uint8 and len(d["train"][1]) == 100
    raw = pickle.load(open(tmp_path / "cifar-10-batches-py" / "data_batch_1", "rb"))
    assert (d["train"][0][:20].reshape(20, -1) == raw[b"data"]).all()
    assert read_idx(tmp_path / "MNIST" / "raw" / "t10k-labels-idx1-ubyte.gz").tolist() == list(np.arange(20) % 10)


@pytest.mark.parametrize("name,mutate,expected", BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_broken_data_is_named(tmp_path, name, mutate, expected):
    write_tiny_dataset(tmp_path)
    mutate(tmp_path)
    with pytest.raises(DataError) as e:
        real_sets(tmp_path, None, None, 0)
    assert expected in str(e.value), str(e.value)


def test_safe_unpickle_never_runs_code(tmp_path, capfd):
    _pickle(tmp_path / "evil", {b"data": _Evil()})
    with pytest.raises(DataError, match="refusing to unpickle"):
        safe_unpickle(tmp_path / "evil")
    assert "unpickled" not in capfd.readouterr().out


def test_rules_pass_and_fail():
    from paperlib.papers.supcon_strata import (rule_gain, rule_size_order, rule_learned, rule_size_order_vs, rule_beats_all, rule_closed_form,
                                              rule_bound, rule_gain_significant)
    assert rule_gain({"a": [1.0], "b": [0.1]}) and not rule_gain({"a": [1.0], "b": [-0.1]})
    assert rule_gain_significant({"a": [1.0]}, {"a": 0.01}) and not rule_gain_significant({"a": [1.0]}, {"a": 0.3})
    assert rule_size_order([1, 2, 3], [0.1, 0.2, 0.3]) and not rule_size_order([1, 2, 3], [0.3, 0.2, 0.1])
    assert rule_learned([0.8], 0.5) and not rule_learned([0.74], 0.5)
    assert rule_size_order_vs([9, 4, 2, 1], [0.9, 0.6, 0.3, 0.1], [0.95, 0.94, 0.96, 0.93])
    assert not rule_size_order_vs([9, 4, 2, 1], [0.9, 0.6, 0.3, 0.1], [0.9, 0.7, 0.4, 0.2])      # L_SC orders them as strongly
    assert rule_beats_all({"a": [0.1, 0.12, 0.11]})[0] is True and rule_beats_all({"a": [0.0, 0.0, 0.0]})[0] is False
    assert rule_beats_all({"a": [0.1, 0.12, 0.11], "b": [0.1, -0.2, 0.05]})[0] is False and rule_beats_all({"a": [0.1]})[0] is None
    assert rule_closed_form([0.2], [0.201], [0.001]) and not rule_closed_form([0.2], [0.21], [0.001])
    assert rule_bound([1.0], [1.0], 1.0) and not rule_bound([1.1], [1.2], 1.0)


def test_rule_items_beat_one_block():
    "C8 per replicate block: paired bootstrap over the block's test items, averaged over the coreset sizes."
    from paperlib.papers.supcon_strata import rule_items_beat
    o = np.r_[np.ones(300), np.zeros(200)]
    b = o.copy(); b[:60] = 0                                   # ours right on 60 more items at both sizes
    assert rule_items_beat([o, o], [b, b])["passed"] is True
    assert rule_items_beat([b, b], [o, o])["passed"] is False
    assert rule_items_beat(o, o)["passed"] is False            # a tie is not a win
    mixed = o.copy(); mixed[:60] = 0; mixed[300:360] = 1        # as many items lost as won
    assert rule_items_beat([o, o], [mixed, mixed])["passed"] is False
    with pytest.raises(ValueError): rule_items_beat([o, o], [o])


def test_collapse_bound_is_attained_by_the_simplex_classifier():
    from paperlib.papers.supcon_strata import simplex, collapse_bound, collapsed_fine_ce
    for K, m in ((2, 5), (5, 3)):
        W = simplex(K)[np.arange(K * m) // m]
        assert collapsed_fine_ce(W, K, m) == pytest.approx(collapse_bound(m, K * m, K), abs=1e-12)
        assert collapsed_fine_ce(0.5 * W, K, m) > collapse_bound(m, K * m, K)
