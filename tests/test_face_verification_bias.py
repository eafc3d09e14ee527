"Tests of the exported pieces of the face-verification-bias paper: SynthFaces, the triplet embedder, the real-data loader, the analysis."
import importlib.util
import numpy as np
import pandas as pd
import pytest

from paperlib.data import DataError
from paperlib.papers.face_verification_bias import (
    RACES, GENDERS, FACE_DATASETS, FACE_LAYOUTS, face_layout, load_face_dataset, subgroup_counts, SynthFaces,
    VGGFACE2_RACE_SHARES, VGGFACE2_GENDER_SHARES, BALANCED_RACE_SHARES, BALANCED_GENDER_SHARES, identity_batches,
    train_triplet_embedder, embed, analyse_embeddings, group_order, FVResult)


# --- SynthFaces ---------------------------------------------------------------------------------------------------

def test_subgroup_counts_follow_the_shares():
    c = subgroup_counts(1000, VGGFACE2_RACE_SHARES, VGGFACE2_GENDER_SHARES)
    assert sum(c.values()) == 1000
    race = {r: sum(v for (rr, _), v in c.items() if rr == r) for r in RACES}
    assert race == pytest.approx({"A": 60, "I": 40, "B": 158, "W": 742}, abs=1)
    assert set(subgroup_counts(40, BALANCED_RACE_SHARES, BALANCED_GENDER_SHARES).values()) == {5}
    with pytest.raises(ValueError, match="race_shares must be non-negative and sum to 1"):
        subgroup_counts(10, dict(A=0.7, W=0.7), BALANCED_GENDER_SHARES)


def test_synthfaces_structure_and_determinism():
    w = SynthFaces(seed=3)
    X, ix = w.sample({("I", "M"): 200, ("W", "F"): 200}, 3, np.random.default_rng(0), prefix="t")
    assert X.shape == (1200, 72) and X.dtype == np.float32
    assert ix.identity.nunique() == 400 and (ix.groupby("identity").size() == 3).all()
    assert ix.identity.iloc[0].startswith("t-IM-")
    XI, XW = X[ix.race.to_numpy() == "I"], X[ix.race.to_numpy() == "W"]
    assert XI.mean(0) @ w.r["I"] == pytest.approx(2.0, abs=0.15) and XW.mean(0) @ w.r["I"] == pytest.approx(0, abs=0.15)
    assert XI.mean(0) @ w.g == pytest.approx(0.5, abs=0.15) and XW.mean(0) @ w.g == pytest.approx(-0.5, abs=0.15)
    # identity variance lives in S, U_race, V_gender: var of identity means in U_I is ~1 + tau^2/3 (+ noise/3), ~0 in U_W
    means = XI.reshape(200, 3, 72).mean(1)
    assert (means @ w.U["I"]).var() == pytest.approx(1 + (0.35**2 + 0.3**2) / 3, rel=0.15)
    assert (means @ w.U["W"]).var() == pytest.approx(0.3**2 / 3, rel=0.25)
    X2, ix2 = SynthFaces(seed=3).sample({("I", "M"): 200, ("W", "F"): 200}, 3, np.random.default_rng(0), prefix="t")
    assert np.array_equal(X, X2) and ix.equals(ix2)
    assert not np.array_equal(SynthFaces(seed=4).sample({("I", "M"): 2}, 3, np.random.default_rng(0))[0], X[:6])
    with pytest.raises(ValueError, match="need 65 dimensions but dim=64"): SynthFaces(dim=64)


# --- embedder -----------------------------------------------------------------------------------------------------

def test_identity_batches_cover_ids_and_pad_small_ones():
    ids = np.r_[np.repeat(np.arange(10), 5), [10, 10]]          # identity 10 has only 2 images
    batches = list(identity_batches(ids, batch_ids=4, per_id=3, rng=np.random.default_rng(0)))
    assert [len(b) for b, _ in batches] == [12, 12, 9]
    seen = np.concatenate([lab for _, lab in batches])
    assert set(seen) == set(range(11))
    for idx, lab in batches: assert (ids[idx] == lab).all()


def test_triplet_embedder_learns_identities_deterministically():
    w = SynthFaces(seed=0)
    X, ix = w.sample(subgroup_counts(64, BALANCED_RACE_SHARES, BALANCED_GENDER_SHARES), 4, np.random.default_rng(1))
    m, hist = train_triplet_embedder(X, ix.identity, epochs=5, seed=0)
    E = embed(m, X)
    assert E.shape == (len(X), 64) and np.allclose(np.linalg.norm(E, axis=1), 1)
    assert hist[-1] < hist[0]
    same = ix.identity.to_numpy()[:, None] == ix.identity.to_numpy()[None]
    S = E @ E.T
    assert S[same & ~np.eye(len(E), dtype=bool)].mean() > S[~same].mean() + 0.3
    m2, hist2 = train_triplet_embedder(X, ix.identity, epochs=5, seed=0)
    assert hist == hist2 and np.array_equal(embed(m2, X), E)
    with pytest.raises(ValueError, match="rows of X but"): train_triplet_embedder(X[:-1], ix.identity, epochs=1)


# --- real data ----------------------------------------------------------------------------------------------------

def write_bfw(root, n_ids=4, n_imgs=3, images=True, embeddings=True, dim=6, seed=0):
    "A tiny BFW folder in the documented layout: index.csv, images/ and/or embeddings.npy."
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for r in RACES:
        for g in GENDERS:
            for k in range(n_ids):
                for j in range(n_imgs):
                    rows.append(dict(path=f"{r}{g}/{k}_{j}.jpg", identity=f"{r}{g}{k}", race=r, gender=g, skin_tone=""))
    ix = pd.DataFrame(rows)
    ix.to_csv(root / "index.csv", index=False)
    if images:
        for p in ix.path:
            (root / "images" / p).parent.mkdir(parents=True, exist_ok=True)
            (root / "images" / p).write_bytes(b"\xff\xd8 not really a jpeg")
    if embeddings:
        np.save(root / "embeddings.npy", np.random.default_rng(seed).normal(size=(len(ix), dim)))
    return ix


def test_load_face_dataset_reads_the_real_layout(tmp_path):
    ix = write_bfw(tmp_path / "bfw")
    src, index, E = load_face_dataset(tmp_path / "bfw", "bfw")
    assert src.kind == "real" and src.root == str(tmp_path / "bfw") and src.fingerprint.startswith("real-")
    assert len(index) == len(ix) == len(E) and E.shape[1] == 6
    assert index.race.tolist() == ix.race.tolist() and index.attrs["discarded_no_face"] == 0
    # same files, same fingerprint; a changed index, a different one
    assert load_face_dataset(tmp_path / "bfw", "bfw")[0].fingerprint == src.fingerprint
    ix.iloc[:-1].to_csv(tmp_path / "bfw" / "index.csv", index=False)
    np.save(tmp_path / "bfw" / "embeddings.npy", np.zeros((len(ix) - 1, 6)))
    assert load_face_dataset(tmp_path / "bfw", "bfw")[0].fingerprint != src.fingerprint


def test_load_face_dataset_drops_rows_without_a_face(tmp_path):
    write_bfw(tmp_path / "bfw")
    E = np.load(tmp_path / "bfw" / "embeddings.npy"); E[[0, 5]] = np.nan
    np.save(tmp_path / "bfw" / "embeddings.npy", E)
    _, index, E2 = load_face_dataset(tmp_path / "bfw", "bfw")
    assert len(index) == len(E) - 2 and index.attrs["discarded_no_face"] == 2 and np.isfinite(E2).all()
    E[7, 0] = np.inf
    np.save(tmp_path / "bfw" / "embeddings.npy", E)
    with pytest.raises(DataError, match="row 7: some values are NaN/inf"): load_face_dataset(tmp_path / "bfw", "bfw")


def test_load_face_dataset_names_what_is_wrong(tmp_path):
    root = tmp_path / "bfw"
    with pytest.raises(DataError, match="does not exist"): load_face_dataset(root, "bfw")
    ix = write_bfw(root, embeddings=False)
    bad = ix.copy(); bad.loc[4, "race"] = "X"
    bad.to_csv(root / "index.csv", index=False)
    with pytest.raises(DataError, match=r"row 6, column 'race': 'X' is not one of the valid values \(A, I, B, W\)"):
        load_face_dataset(root, "bfw")
    bad = ix.copy(); bad.loc[0, "gender"] = ""
    bad.to_csv(root / "index.csv", index=False)
    with pytest.raises(DataError, match="row 2, column 'gender': empty"): load_face_dataset(root, "bfw")
    ix.drop(columns="identity").to_csv(root / "index.csv", index=False)
    with pytest.raises(DataError, match=r"missing column\(s\) \['identity'\]"): load_face_dataset(root, "bfw")
    ix.to_csv(root / "index.csv", index=False)
    (root / "images" / ix.path[3]).unlink()
    with pytest.raises(DataError, match="row 5, column 'path': missing file .*or provide embeddings.npy"):
        load_face_dataset(root, "bfw")
    np.save(root / "embeddings.npy", np.zeros((3, 4)))
    with pytest.raises(DataError, match=r"shape \(3, 4\).*one row per index row"): load_face_dataset(root, "bfw")
    with pytest.raises(ValueError, match="valid: bfw, rfw, ijbc, vggface2"): load_face_dataset(root, "lfw")


@pytest.mark.skipif(importlib.util.find_spec("facenet_pytorch") is not None, reason="facenet-pytorch is installed")
def test_images_without_embeddings_need_facenet(tmp_path):
    write_bfw(tmp_path / "bfw", embeddings=False)
    with pytest.raises(ImportError, match="pip install --no-deps facenet-pytorch"):
        load_face_dataset(tmp_path / "bfw", "bfw")


def test_layouts_of_the_other_datasets(tmp_path):
    cols = {c.name: c for c in FACE_LAYOUTS["ijbc"].columns}
    assert not cols["skin_tone"].allow_empty and cols["race"].allow_empty and cols["skin_tone"].choices == tuple(range(1, 7))
    assert {c.name: c.allow_empty for c in face_layout("vggface2").columns}["gender"] is False
    root = tmp_path / "ijbc"; root.mkdir()
    pd.DataFrame(dict(path=["a.jpg"] * 4, identity=["p", "p", "q", "q"], race="", gender="F", skin_tone=[1, 1, 7, 7])
                 ).to_csv(root / "index.csv", index=False)
    np.save(root / "embeddings.npy", np.ones((4, 3)))
    with pytest.raises(DataError, match=r"row 4, column 'skin_tone': '7' is not one of the valid values \(1, 2, 3, 4, 5, 6\)"):
        load_face_dataset(root, "ijbc")
    assert set(FACE_DATASETS) == {"bfw", "rfw", "ijbc", "vggface2"}


# --- the analysis -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_result():
    w = SynthFaces(seed=0)
    X, ix = w.sample({(r, g): 10 for r in RACES for g in GENDERS}, 4, np.random.default_rng(2))
    E = X / np.linalg.norm(X, axis=1, keepdims=True)
    return analyse_embeddings(E, ix, B=50, seed=1), ix, E


def test_analyse_embeddings_runs_the_papers_pipeline(small_result):
    r, ix, E = small_result
    assert isinstance(r, FVResult) and set(r.split) == {"val", "test"}
    assert ix.assign(s=r.split).groupby("identity").s.nunique().max() == 1
    assert r.pairs.groupby(["split", "race", "gender"]).genuine.mean().eq(0.25).all()
    val_neg = r.pairs[(r.pairs.split == "val") & ~r.pairs.genuine]
    assert r.t_global == np.quantile(val_neg.S, 0.95, method="higher")
    assert list(r.thresholds["race"].index) == [*RACES, "global"]
    assert len(r.ttests) == 21 and (r.ttests.m == 21).all()
    assert np.allclose(r.ttests.p_adj, np.minimum(1, 1 - (1 - r.ttests.p) ** 21))
    assert set(r.ttests.family) == {f"{d}:{a}" for d in ("pairwise", "centroid", "h0") for a in ("race", "gender")}
    assert list(r.clusters.clusters) == ["race", "gender", "both"] and list(r.clusters.k) == [4, 2, 8]
    n_test_race = (r.split == "test").sum() // 4
    assert all(len(v) == n_test_race - 1 for v in r.samples["h0"]["race"].values())
    test_w = r.pairs[(r.pairs.split == "test") & (r.pairs.race == "W")]
    assert r.metric("race", "W", "FPR").value == pytest.approx((test_w.S[~test_w.genuine] >= r.t_global).mean())
    t_ab, t_ba = r.test("centroid", "race", "A", "W"), r.test("centroid", "race", "W", "A")
    assert t_ab.t == -t_ba.t and t_ab.mean_a == t_ba.mean_b and t_ab.p_adj == t_ba.p_adj


def test_analyse_embeddings_is_deterministic_and_checks_input(small_result):
    r, ix, E = small_result
    r2 = analyse_embeddings(E, ix, B=50, seed=1)
    pd.testing.assert_frame_equal(r.metrics, r2.metrics)
    pd.testing.assert_frame_equal(r.ttests, r2.ttests)
    with pytest.raises(ValueError, match="embeddings but"): analyse_embeddings(E[:-1], ix)
    with pytest.raises(ValueError, match="unknown distribution"): analyse_embeddings(E, ix, distributions=("knn",))


def test_unequal_groups_are_compared_at_equal_n():
    w = SynthFaces(seed=0)
    X, ix = w.sample({("A", "F"): 20, ("W", "F"): 8}, 3, np.random.default_rng(0))
    r = analyse_embeddings(X, ix, ("race",), ("race",), B=0, cluster=False)
    assert len({len(v) for v in r.samples["h0"]["race"].values()}) == 1


def test_group_order():
    assert group_order("race", ["W", "A", "B", "I"]) == list(RACES)
    assert group_order("skin_tone", ["3", "1", "6"]) == ["1", "3", "6"]
    assert group_order("site", ["b", "a"]) == ["a", "b"]
