"Tests of the exported pieces of the face-verification-bias paper: SynthFaces, the embedder, the identity bootstrap, the real-data loader, the analysis and every claim rule."
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from paperlib.data import DataError
from paperlib.metric import embed
from paperlib.verification import metric_value, METRIC_KEYS
from paperlib.papers.face_verification_bias import (
    RACES, GENDERS, FACE_DATASETS, FACE_LAYOUTS, face_layout, load_face_dataset, subgroup_counts, swept_shares, SynthFaces,
    VGGFACE2_RACE_SHARES, VGGFACE2_GENDER_SHARES, BALANCED_RACE_SHARES, BALANCED_GENDER_SHARES, TripletMLP,
    train_face_embedder, identity_bootstrap_metrics, analyse_embeddings, group_order, FVResult, seed_outcomes,
    all_seeds_hold, gate_outcome, control_outcome, learned_rule, far_rule, backends_agree_rule, fpr_rule, ppv_rule,
    bnc_rule, cis_overlap_rule, equivalence_rule, gender_rule, cluster_rule, distribution_rule, threshold_rule, dose_response_rule, smaller_effect_rule, lowest_accuracy_rule,
    better_than_rule)


# --- SynthFaces ---------------------------------------------------------------------------------------------------

def test_subgroup_counts_follow_the_shares():
    c = subgroup_counts(1000, VGGFACE2_RACE_SHARES, VGGFACE2_GENDER_SHARES)
    assert sum(c.values()) == 1000
    race = {r: sum(v for (rr, _), v in c.items() if rr == r) for r in RACES}
    assert race == pytest.approx({"A": 60, "I": 40, "B": 158, "W": 742}, abs=1)
    assert set(subgroup_counts(40, BALANCED_RACE_SHARES, BALANCED_GENDER_SHARES).values()) == {5}
    with pytest.raises(ValueError, match="race_shares must be non-negative and sum to 1"):
        subgroup_counts(10, dict(A=0.7, W=0.7), BALANCED_GENDER_SHARES)
    assert swept_shares("W", 0.25) == pytest.approx(dict(A=0.25, I=0.25, B=0.25, W=0.25))
    with pytest.raises(ValueError, match="share must be in"): swept_shares("W", 1.0)


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

def test_face_embedder_learns_identities_deterministically():
    w = SynthFaces(seed=0)
    X, ix = w.sample(subgroup_counts(64, BALANCED_RACE_SHARES, BALANCED_GENDER_SHARES), 4, np.random.default_rng(1))
    fit = train_face_embedder(X, ix.identity, steps=60, seed=0, batch_ids=16, log_every=10)
    assert isinstance(fit.model, TripletMLP) and fit.model.dim == 64
    E = embed(fit.model, X).double().numpy()
    assert E.shape == (len(X), 64) and np.allclose(np.linalg.norm(E, axis=1), 1)
    assert fit.history.loss.iloc[-1] < fit.history.loss.iloc[0]
    same = ix.identity.to_numpy()[:, None] == ix.identity.to_numpy()[None]
    S = E @ E.T
    assert S[same & ~np.eye(len(E), dtype=bool)].mean() > S[~same].mean() + 0.3
    fit2 = train_face_embedder(X, ix.identity, steps=60, seed=0, batch_ids=16, log_every=10)
    assert fit.history.equals(fit2.history) and np.array_equal(embed(fit2.model, X).numpy(), E.astype(np.float32))
    fit3 = train_face_embedder(X, ix.identity, steps=1, seed=1, batch_ids=16)
    assert not np.array_equal(embed(fit3.model, X[:3]).numpy(), embed(train_face_embedder(X, ix.identity, steps=1, seed=0,
                                                                                          batch_ids=16).model, X[:3]).numpy())
    with pytest.raises(ValueError, match="rows of X but"): train_face_embedder(X[:-1], ix.identity, steps=1)


# --- identity bootstrap -------------------------------------------------------------------------------------------

def _pairs(n=600, seed=0):
    r = np.random.default_rng(seed)
    ids = np.repeat(np.arange(20), 10).astype(str)
    a, b = r.choice(ids, n), r.choice(ids, n)
    gen = a == b
    return gen, r.normal(0.3, 0.2, n) + 0.4 * gen, a, b


def test_identity_bootstrap_estimates_are_the_library_metrics():
    gen, S, a, b = _pairs()
    groups = np.repeat(["x", "y"], 300)
    m = identity_bootstrap_metrics(gen, S, a, b, groups, 0.5, B=200, seed=1)
    assert list(m.columns) == ["group", "metric", "value", "lo", "hi", "n_pairs", "n_pos", "n_neg", "n_ids"]
    for key in METRIC_KEYS:
        for g, sl in (("x", slice(0, 300)), ("y", slice(300, 600))):
            got = m[(m.group == g) & (m.metric == key)].value.iloc[0]
            assert got == pytest.approx(float(metric_value(key, gen[sl], S[sl] >= 0.5, S[sl])), abs=1e-12)
    assert ((m.lo <= m.value + 1e-12) & (m.value <= m.hi + 1e-12)).all()
    pd.testing.assert_frame_equal(m, identity_bootstrap_metrics(gen, S, a, b, groups, 0.5, B=200, seed=1))
    assert not m.equals(identity_bootstrap_metrics(gen, S, a, b, groups, 0.5, B=200, seed=2))
    none = identity_bootstrap_metrics(gen, S, a, b, groups, 0.5, B=0)
    assert none.lo.isna().all() and np.allclose(none.value, m.value, equal_nan=True)


def test_identity_bootstrap_sees_false_accepts_concentrated_in_few_people():
    pa, pb = np.arange(400) % 40, (np.arange(400) // 40 + np.arange(400) % 40 + 1) % 40
    few = np.where(np.isin(pa, [0, 1]), 0.9, 0.1)
    spread = np.where((np.arange(400) < 40) & (np.arange(400) % 2 == 0), 0.9, 0.1)
    fpr = lambda s: identity_bootstrap_metrics(np.zeros(400, bool), s, pa, pb, np.zeros(400), 0.5, B=400).set_index("metric").loc["FPR"]
    assert fpr(few).value == fpr(spread).value == pytest.approx(0.05)
    assert fpr(few).hi - fpr(few).lo > 2 * (fpr(spread).hi - fpr(spread).lo)


def test_identity_bootstrap_checks_its_input():
    with pytest.raises(ValueError, match="two different identities"):
        identity_bootstrap_metrics([True], [0.5], ["a"], ["b"], [0], 0.5)
    with pytest.raises(ValueError, match="one entry per pair"):
        identity_bootstrap_metrics([True, False], [0.5], ["a"], ["a"], [0], 0.5)


# --- real data ----------------------------------------------------------------------------------------------------

N_IDS, N_IMGS, DIM = 10, 3, 8

def _write(folder: Path, groups: list[dict], seed: int):
    "index.csv and embeddings.npy: N_IDS people per group, N_IMGS images each, embeddings clustered by person."
    folder.mkdir(parents=True, exist_ok=True)
    rows = [dict(path=f"{'-'.join(map(str, g.values()))}/{k}_{j}.jpg", identity=f"{folder.name}-{'-'.join(map(str, g.values()))}-{k}",
                 race=g.get("race", ""), gender=g.get("gender", ""), skin_tone=g.get("skin_tone", ""))
            for g in groups for k in range(N_IDS) for j in range(N_IMGS)]
    pd.DataFrame(rows, columns=["path", "identity", "race", "gender", "skin_tone"]).to_csv(folder / "index.csv", index=False)
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(rows) // N_IMGS, DIM))
    np.save(folder / "embeddings.npy", np.repeat(centres, N_IMGS, axis=0) + 0.3 * rng.normal(size=(len(rows), DIM)))


def write_tiny_dataset(data_root: Path) -> None:
    "The paper's four datasets in the real layout, tiny: bfw/, rfw/, ijbc/, vggface2/ with index.csv and embeddings.npy."
    data_root = Path(data_root)
    _write(data_root / "bfw", [dict(race=r, gender=g) for r in RACES for g in GENDERS], 0)
    _write(data_root / "rfw", [dict(race=r) for r in RACES], 1)
    _write(data_root / "ijbc", [dict(skin_tone=t, gender=g) for t in range(1, 7) for g in GENDERS], 2)
    _write(data_root / "vggface2", [dict(gender=g) for g in GENDERS], 3)


def load_all(data_root: Path) -> dict:
    "Every dataset present under `data_root`, through the paper's loader (what the notebook reads)."
    return {k: load_face_dataset(Path(data_root) / k, k) for k in FACE_DATASETS if (Path(data_root) / k).is_dir()}


def _edit_index(folder, fn):
    "A breakage that edits `folder`/index.csv as a DataFrame (`fn` changes it in place, or returns a new one)."
    def mutate(root):
        p = Path(root) / folder / "index.csv"
        df = pd.read_csv(p, dtype=str, keep_default_na=False)
        out = fn(df)
        (df if out is None else out).to_csv(p, index=False)
    return mutate

def _set(folder, row, col, value): return _edit_index(folder, lambda df: df.__setitem__(col, df[col].where(df.index != row, value)))

def _lines(folder, fn):
    def mutate(root):
        p = Path(root) / folder / "index.csv"
        p.write_bytes(fn(p.read_bytes()))
    return mutate

def _emb(folder, fn):
    def mutate(root):
        p = Path(root) / folder / "embeddings.npy"
        fn(p)
    return mutate

def _bom_and_bad_race(root):
    _set("bfw", 4, "race", "X")(root)
    p = Path(root) / "bfw" / "index.csv"
    p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())

def _replace_line(k, new):
    def fn(b):
        lines = b.split(b"\n")
        lines[k] = new(lines[k])
        return b"\n".join(lines)
    return fn

BREAKAGES = [
    ("bom_then_bad_race", _bom_and_bad_race, "bfw/index.csv, row 6, column 'race': 'X' is not one of the valid values"),
    ("bad_race", _set("bfw", 0, "race", "Hispanic"), "bfw/index.csv, row 2, column 'race': 'Hispanic' is not one of the valid values"),
    ("bad_gender", _set("vggface2", 3, "gender", "male"), "vggface2/index.csv, row 5, column 'gender': 'male' is not one of"),
    ("skin_tone_not_an_int", _set("ijbc", 2, "skin_tone", "dark"), "ijbc/index.csv, row 4, column 'skin_tone': 'dark' is not a valid int"),
    ("skin_tone_fraction", _set("ijbc", 5, "skin_tone", "2.5"), "ijbc/index.csv, row 7, column 'skin_tone': '2.5' is not a valid int"),
    ("skin_tone_out_of_range", _set("ijbc", 3, "skin_tone", "7"), "ijbc/index.csv, row 5, column 'skin_tone': '7' is not one of the valid values"),
    ("empty_gender", _set("bfw", 1, "gender", ""), "bfw/index.csv, row 3, column 'gender': empty, but a value is required"),
    ("empty_race_in_rfw", _set("rfw", 7, "race", ""), "rfw/index.csv, row 9, column 'race': empty, but a value is required"),
    ("empty_identity", _set("rfw", 0, "identity", ""), "rfw/index.csv, row 2, column 'identity': empty"),
    ("missing_column", _edit_index("vggface2", lambda df: df.drop(columns="identity")),
     "vggface2/index.csv: missing column(s) ['identity']"),
    ("empty_index", _lines("bfw", lambda b: b""), "bfw/index.csv is empty"),
    ("header_only", _lines("bfw", lambda b: b.split(b"\n")[0] + b"\n"), "bfw/index.csv has a header but no rows"),
    ("extra_field", _lines("bfw", _replace_line(3, lambda l: l + b",x")), "bfw/index.csv, row 4: 6 fields, but the header has 5"),
    ("duplicate_path", _edit_index("bfw", lambda df: df.__setitem__("path", df.path.where(df.index != 5, df.path[4]))),
     "bfw/index.csv, row 7, column 'path': 'A-F/1_1.jpg' repeats row 6"),
    ("identity_in_two_subgroups", _set("bfw", 1, "race", "W"), "bfw/index.csv, row 3, column 'race': identity 'bfw-A-F-0' is 'W' here but 'A' in row 2"),
    ("non_utf8", _lines("bfw", _replace_line(2, lambda l: l.replace(b".jpg", b"\xe9.jpg", 1))), "bfw/index.csv, row 3: not UTF-8"),
    ("missing_index", lambda root: (Path(root) / "rfw" / "index.csv").unlink(), "missing file"),
    ("images_missing_without_embeddings", _emb("bfw", lambda p: p.unlink()), "bfw/index.csv, row 2, column 'path': missing file"),
    ("embeddings_wrong_rows", _emb("bfw", lambda p: np.save(p, np.load(p)[:-1])), "bfw/embeddings.npy: shape (239, 8)"),
    ("embeddings_one_dimensional", _emb("ijbc", lambda p: np.save(p, np.load(p)[:, 0])), "ijbc/embeddings.npy: shape (360,)"),
    ("embeddings_partial_nan", _emb("bfw", lambda p: np.save(p, np.where(np.arange(240)[:, None] * 8 + np.arange(8) == 56, np.nan, np.load(p)))),
     "bfw/embeddings.npy, row 7 (index.csv row 9): some values are NaN/inf"),
    ("embeddings_not_npy", _emb("vggface2", lambda p: p.write_text("path,x\n")), "vggface2/embeddings.npy: cannot be read as a .npy array"),
    ("embeddings_text", _emb("rfw", lambda p: np.save(p, np.array([["a"] * 8] * 120))), "rfw/embeddings.npy: shape (120, 8) (<U1)"),
]


def test_the_tiny_dataset_loads(tmp_path):
    write_tiny_dataset(tmp_path)
    got = load_all(tmp_path)
    assert set(got) == {"bfw", "rfw", "ijbc", "vggface2"}
    src, index, E = got["bfw"]
    assert src.kind == "real" and src.root == str(tmp_path / "bfw") and src.fingerprint.startswith("real-")
    assert len(index) == len(E) == 8 * N_IDS * N_IMGS and E.shape[1] == DIM and index.attrs["discarded_no_face"] == 0
    assert got["ijbc"][1].skin_tone.tolist()[:3] == ["1", "1", "1"]
    r = analyse_embeddings(E, index, B=20)
    assert r.tar > 0.5 and len(r.ttests) == 21


def test_a_bom_header_is_read(tmp_path):
    write_tiny_dataset(tmp_path)
    p = tmp_path / "bfw" / "index.csv"
    before = load_face_dataset(tmp_path / "bfw", "bfw")[1]
    p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
    after = load_face_dataset(tmp_path / "bfw", "bfw")[1]
    assert list(after.columns) == list(before.columns) and after.equals(before)


@pytest.mark.parametrize("name,mutate,expected", BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_breakages_name_file_and_row(tmp_path, name, mutate, expected):
    write_tiny_dataset(tmp_path)
    mutate(tmp_path)
    with pytest.raises(DataError) as e:
        load_all(tmp_path)
    msg = str(e.value)
    assert expected in msg, msg
    assert "index.csv" in msg or "embeddings.npy" in msg, msg


def test_fingerprint_covers_index_and_embeddings(tmp_path):
    write_tiny_dataset(tmp_path)
    fp = load_face_dataset(tmp_path / "bfw", "bfw")[0].fingerprint
    assert load_face_dataset(tmp_path / "bfw", "bfw")[0].fingerprint == fp
    E = np.load(tmp_path / "bfw" / "embeddings.npy"); E[0, 0] += 1
    np.save(tmp_path / "bfw" / "embeddings.npy", E)
    fp2 = load_face_dataset(tmp_path / "bfw", "bfw")[0].fingerprint
    assert fp2 != fp
    _set("bfw", 0, "path", "A-F/other.jpg")(tmp_path)
    assert load_face_dataset(tmp_path / "bfw", "bfw")[0].fingerprint != fp2


def test_load_face_dataset_drops_rows_without_a_face(tmp_path):
    write_tiny_dataset(tmp_path)
    E = np.load(tmp_path / "bfw" / "embeddings.npy"); E[[0, 5]] = np.nan
    np.save(tmp_path / "bfw" / "embeddings.npy", E)
    _, index, E2 = load_face_dataset(tmp_path / "bfw", "bfw")
    assert len(index) == len(E) - 2 and index.attrs["discarded_no_face"] == 2 and np.isfinite(E2).all()
    assert index.attrs["lines"][:2] == [3, 4]


@pytest.mark.skipif(importlib.util.find_spec("facenet_pytorch") is not None, reason="facenet-pytorch is installed")
def test_images_without_embeddings_need_facenet(tmp_path):
    write_tiny_dataset(tmp_path)
    (tmp_path / "bfw" / "embeddings.npy").unlink()
    for p in pd.read_csv(tmp_path / "bfw" / "index.csv").path:
        (tmp_path / "bfw" / "images" / p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "bfw" / "images" / p).write_bytes(b"\xff\xd8 not really a jpeg")
    with pytest.raises(ImportError, match="pip install --no-deps facenet-pytorch"):
        load_face_dataset(tmp_path / "bfw", "bfw")


def test_layouts_of_the_datasets():
    cols = {c.name: c for c in FACE_LAYOUTS["ijbc"].columns}
    assert not cols["skin_tone"].allow_empty and cols["race"].allow_empty and cols["skin_tone"].choices == tuple(range(1, 7))
    assert {c.name: c.allow_empty for c in face_layout("vggface2").columns}["gender"] is False
    assert {k: l.folder for k, l in FACE_LAYOUTS.items()} == {k: k for k in ("bfw", "rfw", "ijbc", "vggface2")}
    assert all(l.unique == ("path",) for l in FACE_LAYOUTS.values())
    with pytest.raises(ValueError, match="valid: bfw, rfw, ijbc, vggface2"): face_layout("lfw")
    with pytest.raises(ValueError, match="valid: bfw, rfw, ijbc, vggface2"): load_face_dataset(".", "lfw")


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
    test = r.pairs[r.pairs.split == "test"]
    test_w = test[test.race == "W"]
    assert r.metric("race", "W", "FPR").value == pytest.approx((test_w.S[~test_w.genuine] >= r.t_global).mean())
    assert r.intervals("race", "FPR")["W"][0] == r.values("race", "FPR")["W"] == r.metric("race", "W", "FPR").value
    assert r.tar == pytest.approx((test.S[test.genuine] >= r.t_global).mean())
    assert r.far == pytest.approx((test.S[~test.genuine] >= r.t_global).mean())
    t_ab, t_ba = r.test("centroid", "race", "A", "W"), r.test("centroid", "race", "W", "A")
    assert t_ab.t == -t_ba.t and t_ab.mean_a == t_ba.mean_b and t_ab.p_adj == t_ba.p_adj
    tt = r.top_tests("centroid")
    assert list(tt) == ["A", "I", "B"] and tt["A"]["mean_top"] == t_ba.mean_a and tt["A"]["d"] == t_ba.cohens_d
    lv = r.top_levene()
    assert list(lv) == ["A", "I", "B"] and lv["B"]["var_top"] == pytest.approx(r.samples["h0"]["race"]["W"].var(ddof=1))


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


# --- the claim rules: one case that must pass, one that must fail ---------------------------------------------------

def test_seed_outcomes_and_gates():
    assert seed_outcomes({0: [], 1: ["x < 1"]}) == ({0: True, 1: False}, "seed 1: x < 1")
    assert seed_outcomes({0: [], 1: []}) == ({0: True, 1: True}, None)
    assert all_seeds_hold({3: [], 4: []}) == (True, None)
    assert all_seeds_hold({3: [], 4: ["a"]}) == (False, "seed 4: a")
    assert gate_outcome([]) == (True, None) and gate_outcome(["a", "b"]) == (False, "a; b")
    assert control_outcome({0: [], 1: ["W×A: p_adj = 0.30"]}) == (True, None)         # one twin without the effect
    held, why = control_outcome({0: [], 1: []})                                          # every twin reproduces the claim
    assert not held and "holds in the balanced twin of every replicate (seeds 0, 1)" in why
    with pytest.raises(ValueError, match="no seeds"): seed_outcomes({})


def test_learned_far_and_backend_gates():
    assert learned_rule({"a": 0.5, "b": 0.99}) == []
    assert learned_rule({"a": 0.49}) == ["a: TAR = 0.490 < 0.5"]
    assert far_rule({"a": 0.026, "b": 0.074}) == []
    assert far_rule({"a": 0.024}) == ["a: test FAR = 0.0240, not within 0.05 ± 0.025"] and len(far_rule({"b": 0.076})) == 1
    assert backends_agree_rule({"W": 1e-9}) == [] and len(backends_agree_rule({"W": 1e-3})) == 1


FPR = dict(A=(0.10, 0.08, 0.12), I=(0.07, 0.05, 0.09), B=(0.05, 0.04, 0.06), W=(0.005, 0.003, 0.008))

def test_fpr_rule():
    assert fpr_rule(FPR) == []
    assert fpr_rule({**FPR, "B": (0.02, 0.007, 0.03)}) == ["hi(FPR_W) = 0.0080 >= lo(FPR_B) = 0.0070"]
    assert len(fpr_rule({**FPR, "W": (0.2, 0.18, 0.22)})) == 3


def test_ppv_rule():
    ppv = dict(A=(0.80, 0.78, 0.82), I=(0.85, 0.83, 0.87), B=(0.88, 0.86, 0.90), W=(0.98, 0.97, 0.99))
    assert ppv_rule(ppv) == []
    assert ppv_rule({**ppv, "B": (0.97, 0.95, 0.975)}) == ["PPV_W = 0.9800 vs PPV_B = 0.9700 (CIs overlap)"]


def test_bnc_rule():
    assert bnc_rule(dict(A=0.5, I=0.4, B=0.45, W=0.32), dict(A=0.80, I=0.81, B=0.82, W=0.83)) == []
    assert bnc_rule(dict(A=0.5, I=0.4, B=0.45, W=0.32), dict(A=0.70, I=0.81, B=0.82, W=0.83)) == \
        ["range(BNC) = 0.1800 <= 2 x range(BPC) = 0.2600"]
    assert bnc_rule(dict(A=0.5, I=0.3, B=0.45, W=0.32), dict(A=0.80, I=0.81, B=0.82, W=0.83)) == ["the lowest BNC is I's, not W's"]


def test_cis_overlap_rule():
    assert cis_overlap_rule(dict(I=(0.1, 0.08, 0.12), B=(0.13, 0.11, 0.15))) == []
    assert len(cis_overlap_rule(dict(I=(0.1, 0.08, 0.10), B=(0.13, 0.11, 0.15)))) == 1


def test_equivalence_rule_c5():
    assert equivalence_rule(dict(I=(0.20, 0.18, 0.22), B=(0.21, 0.19, 0.23))) == []
    assert len(equivalence_rule(dict(I=(0.20, 0.05, 0.35), B=(0.21, 0.06, 0.36)))) == 1      # overlapping but wide: no evidence
    assert len(equivalence_rule(dict(I=(0.20, 0.19, 0.21), B=(0.27, 0.26, 0.28)))) == 1      # precise but 0.07 apart
    assert len(equivalence_rule(dict(I=(0.20, 0.19, 0.21), B=(0.27, 0.26, 0.28)), margin=0.1)) == 0
    with pytest.raises(ValueError, match="margin"): equivalence_rule(dict(I=(0.2, 0.1, 0.3), B=(0.2, 0.1, 0.3)), margin=0)


def test_gender_rule():
    fr, fg = dict(A=0.10, I=0.07, B=0.05, W=0.005), dict(F=0.06, M=0.05)
    dr = dict(pairwise=dict(A=0.5, I=0.4, B=0.3), h0=dict(A=0.5, I=0.2, B=-0.15))
    assert gender_rule(fr, fg, dict(pairwise=0.1, h0=-0.05), dr) == []
    assert gender_rule(fr, dict(F=0.09, M=0.03), dict(pairwise=0.1, h0=0.05), dr) == \
        ["|FPR_F - FPR_M| = 0.0600 >= min_g |FPR_W - FPR_g| = 0.0450"]
    assert gender_rule(fr, fg, dict(pairwise=0.1, h0=-0.3), dr) == ["h0: |d(F, M)| = 0.300 >= min_g |d(W, g)| = 0.150"]


def test_cluster_rule():
    assert cluster_rule(dict(gender=0.034, race=0.091, both=0.103), dict(gender=7.55, race=4.36, both=3.98)) == []
    assert len(cluster_rule(dict(gender=0.034, race=0.091, both=0.05), dict(gender=7.55, race=4.36, both=3.98))) == 1
    assert len(cluster_rule(dict(gender=0.034, race=0.091, both=0.103), dict(gender=4.0, race=4.36, both=3.98))) == 1


TESTS = {g: dict(mean_top=0.5, mean_g=0.4, p_adj=1e-5, d=0.8) for g in ("A", "I", "B")}
LEVENE = {g: dict(var_top=0.02, var_g=0.01, p=1e-4) for g in ("A", "I", "B")}

def test_distribution_rule():
    assert distribution_rule(TESTS) == [] and distribution_rule(TESTS, LEVENE) == []
    assert distribution_rule({**TESTS, "B": dict(mean_top=0.5, mean_g=0.49, p_adj=0.06, d=0.05)}) == ["W×B: p_adj = 0.06 (d = +0.050)"]
    assert distribution_rule({**TESTS, "I": dict(mean_top=0.4, mean_g=0.5, p_adj=1e-9, d=-0.8)}) == ["mean_W = 0.4000 <= mean_I = 0.5000"]
    assert len(distribution_rule(TESTS, {**LEVENE, "A": dict(var_top=0.01, var_g=0.02, p=1e-4)})) == 1
    assert len(distribution_rule(TESTS, {**LEVENE, "A": dict(var_top=0.03, var_g=0.02, p=0.2)})) == 1
    assert distribution_rule({"2": dict(mean_top=0.4, mean_g=0.5, p_adj=1e-9, d=-0.8)}, top="1") == ["mean_1 = 0.4000 <= mean_2 = 0.5000"]


def test_threshold_rule():
    assert threshold_rule(dict(A=0.63, I=0.59, B=0.58, W=0.41), 0.57) == []
    assert threshold_rule(dict(A=0.63, I=0.59, B=0.55, W=0.58), 0.57) == \
        ["t*_W = 0.5800 >= t*_global = 0.5700", "t*_B = 0.5500 <= t*_global = 0.5700"]


def test_dose_response_rule():
    sh = np.repeat([0.02, 0.05, 0.1, 0.25, 0.5], 2)
    fails, st = dose_response_rule(sh, sh + np.tile([0, 0.001], 5), 1 - sh)
    assert fails == [] and st["rho_h0"] > 0.9 and st["rho_FPR"] == -1.0 and st["n"] == 10
    assert dose_response_rule(sh, 1 - sh, 1 - sh)[0] == ["rho(share, mean H0) = -1.000, p = <0.001"]
    assert dose_response_rule(sh, sh, sh)[0] == ["rho(share, FPR) = +1.000, p = <0.001"]


def test_real_data_only_rules():
    acc = dict(A=(0.90, 0.89, 0.91), I=(0.95, 0.94, 0.96), B=(0.952, 0.945, 0.96), W=(0.955, 0.945, 0.965))
    assert lowest_accuracy_rule(acc) == []
    assert lowest_accuracy_rule({**acc, "I": (0.85, 0.84, 0.86)}) == ["the lowest ACC is I's, not A's", "ACC CIs of I and B do not overlap",
                                                                       "ACC CIs of I and W do not overlap"]
    assert better_than_rule(acc) == []
    assert better_than_rule({**acc, "I": (0.905, 0.895, 0.915)}) == ["ACC_I = 0.9050, ACC_A = 0.9000, CIs overlap"]
    assert smaller_effect_rule(0.1, -0.8) == [] and smaller_effect_rule(-0.9, 0.8) == ["gender vs race: |d| = 0.900 >= 0.800"]
