"Tests of paperlib.verification: splits, pairs, thresholds, fairness metrics with CIs, cluster indices, distances."
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import confusion_matrix, silhouette_score, calinski_harabasz_score, davies_bouldin_score

from paperlib.verification import (
    subgroup_labels, by_group, identity_split, make_verification_pairs, pair_ratio_table, identity_summary,
    l2_normalize, pair_scores, score_to_distance, threshold_at_far, group_thresholds, METRICS, METRIC_KEYS,
    metric_table, metric_value, confusion_metrics, group_metrics, cis_disjoint, cluster_indices, centroid_distances,
    stratified_subsample)


def faces_index(n_ids_per_group=10, n_imgs=4, races="AW", genders="FM"):
    rows = []
    for r in races:
        for g in genders:
            for k in range(n_ids_per_group):
                rows += [dict(identity=f"{r}{g}{k}", race=r, gender=g)] * n_imgs
    return pd.DataFrame(rows)


# --- splits -------------------------------------------------------------------------------------------------------

def test_identity_split_is_identity_disjoint_stratified_and_deterministic():
    ix = faces_index(10, 3)
    s = identity_split(ix, seed=4)
    assert set(s) == {"val", "test"}
    assert ix.assign(s=s).groupby("identity").s.nunique().max() == 1
    val_ids = ix[s == "val"].drop_duplicates("identity")
    assert val_ids.groupby(["race", "gender"]).size().tolist() == [2, 2, 2, 2]   # 20% of 10 ids in every subgroup
    assert (identity_split(ix, seed=4) == s).all()
    assert not (identity_split(ix, seed=5) == s).all()


def test_identity_split_errors():
    ix = faces_index(5, 2)
    with pytest.raises(ValueError, match="val_frac must be in"): identity_split(ix, val_frac=1.0)
    bad = ix.copy(); bad.loc[0, "race"] = "W"            # identity AF0 now in two subgroups
    with pytest.raises(ValueError, match="identity 'AF0' appears in several subgroups"): identity_split(bad)
    with pytest.raises(KeyError, match=r"no column\(s\) \['skin_tone'\]"): identity_split(ix, group_cols=("skin_tone",))


def test_identity_split_never_empties_a_split():
    ix = faces_index(2, 2)                               # 2 ids per subgroup: 1 val, 1 test
    s = identity_split(ix, val_frac=0.05)
    assert (ix.assign(s=s).drop_duplicates("identity").groupby(["race", "gender", "s"]).size() == 1).all()


# --- pairs --------------------------------------------------------------------------------------------------------

def test_pairs_genuine_and_same_subgroup_imposters_at_25_75():
    ix = faces_index(6, 4)
    p = make_verification_pairs(ix, seed=1)
    ids, race, gender = (ix[c].to_numpy() for c in ("identity", "race", "gender"))
    assert ((ids[p.i] == ids[p.j]) == p.genuine).all()
    assert (race[p.i] == race[p.j]).all() and (gender[p.i] == gender[p.j]).all()
    assert (p.i < p.j).all() and not p.duplicated(["i", "j"]).any()
    t = pair_ratio_table(p, ("gender", "race"))
    assert t.pct_positive.tolist() == [25.0] * 4 and t.pct_negative.tolist() == [75.0] * 4
    assert t.n_pos.tolist() == [6 * 6] * 4                # every genuine pair: 6 ids x C(4, 2)


def test_pairs_cap_and_shortage():
    ix = faces_index(6, 4)
    assert make_verification_pairs(ix, cap_pos=10).groupby("subgroup").genuine.sum().tolist() == [10] * 4
    small = faces_index(2, 3, races="A", genders="F")     # 6 genuine pairs, only 9 imposter pairs exist
    p = make_verification_pairs(small)
    assert (p.genuine.sum(), (~p.genuine).sum()) == (3, 9)
    with pytest.raises(ValueError, match="has no genuine pair"):
        make_verification_pairs(faces_index(1, 3, races="A", genders="F"))
    with pytest.raises(ValueError, match="pos_frac"): make_verification_pairs(ix, pos_frac=0)


def test_pairs_large_group_uses_rejection_sampling_and_stays_valid():
    ix = faces_index(700, 3, races="A", genders="F")      # 2100 images: C(2100, 2) > 2e6 pairs
    p = make_verification_pairs(ix, seed=0)
    ids = ix.identity.to_numpy()
    neg = p[~p.genuine]
    assert len(neg) == 3 * p.genuine.sum() and (ids[neg.i] != ids[neg.j]).all()
    assert not neg.duplicated(["i", "j"]).any() and (neg.i < neg.j).all()
    assert make_verification_pairs(ix, seed=0).equals(p)


# --- scores and thresholds ----------------------------------------------------------------------------------------

def test_scores_and_distances():
    rng = np.random.default_rng(0)
    E = rng.normal(size=(20, 8))
    pairs = pd.DataFrame(dict(i=np.arange(10), j=np.arange(10, 20)))
    S = pair_scores(E, pairs)
    U = l2_normalize(E)
    np.testing.assert_allclose(S, (U[:10] * U[10:]).sum(1))
    np.testing.assert_allclose(score_to_distance(S), np.linalg.norm(U[:10] - U[10:], axis=1), atol=1e-12)
    np.testing.assert_allclose(score_to_distance(S, "cosine"), 1 - S)
    with pytest.raises(ValueError, match="valid: euclidean, cosine"): score_to_distance(S, "l1")


def test_threshold_at_far_matches_quantile_and_caps_the_false_accept_rate():
    neg = np.random.default_rng(1).normal(size=1001)
    t = threshold_at_far(neg, 0.05)
    assert t == np.quantile(neg, 0.95, method="higher") and t in neg
    assert (neg >= t).mean() <= 0.05 + 1 / len(neg)
    with pytest.raises(ValueError, match="no imposter scores"): threshold_at_far([], 0.05)
    with pytest.raises(ValueError, match=r"far must be in \(0, 1\), got 1.5"): threshold_at_far(neg, 1.5)


def test_group_thresholds_ignore_genuine_pairs():
    s = np.r_[np.linspace(0, 1, 101), np.full(50, 5.0)]
    y = np.r_[np.zeros(101, bool), np.ones(50, bool)]
    t = group_thresholds(s, y, ["a"] * 151, far=0.1)
    assert t["a"] == t["global"] == pytest.approx(0.9)


# --- fairness metrics ---------------------------------------------------------------------------------------------

def test_confusion_metrics_agree_with_sklearn():
    rng = np.random.default_rng(2)
    y = rng.random(500) < 0.3; s = rng.random(500) + 0.3 * y; d = s > 0.7
    tn, fp, fn, tp = confusion_matrix(y, d).ravel()
    m = confusion_metrics(y, d, s)
    assert m["ACC"] == pytest.approx((tp + tn) / 500) and m["FPR"] == pytest.approx(fp / (fp + tn))
    assert m["FNR"] == pytest.approx(fn / (fn + tp)) and m["PPV"] == pytest.approx(tp / (tp + fp))
    assert m["NPV"] == pytest.approx(tn / (tn + fn)) and m["SP"] == pytest.approx((tp + fp) / 500)
    assert m["TE"] == pytest.approx(fn / fp)
    assert m["BPC"] == pytest.approx(s[y].mean()) and m["BNC"] == pytest.approx(s[~y].mean())
    with pytest.raises(ValueError, match="unknown metric 'EER'"): metric_value("EER", y, d, s)


def test_metric_registry_is_table_1_plus_two_labelled_extras():
    t = metric_table()
    assert t.metric.tolist() == list(METRIC_KEYS) == ["ACC", "FPR", "FNR", "PPV", "NPV", "BPC", "BNC", "SP", "TE"]
    assert (t.source == "paper").sum() == 7 and t.source.iloc[-2:].str.contains("not named in paper").all()
    assert len({m.criterion for m in METRICS}) == 8      # PPV and NPV share "conditional use accuracy equality"


def test_group_metrics_bootstrap_cis():
    rng = np.random.default_rng(3)
    y = np.tile([True, False, False, False], 300)
    g = np.repeat(["a", "b"], 600)
    s = np.where(y, 0.8, 0.2) + 0.15 * rng.normal(size=1200) + np.where((g == "b") & ~y, 0.25, 0)
    gm = group_metrics(y, s, g, threshold=0.5, B=300, seed=1).set_index(["group", "metric"])
    assert ((gm.lo <= gm.value) & (gm.value <= gm.hi)).all()
    assert gm.loc[("a", "FPR"), "hi"] < gm.loc[("b", "FPR"), "lo"]          # b's imposters look alike
    assert cis_disjoint(gm.loc[("a", "BNC")], gm.loc[("b", "BNC")])
    assert not cis_disjoint(gm.loc[("a", "BPC")], gm.loc[("b", "BPC")])
    again = group_metrics(y, s, g, threshold=0.5, B=300, seed=1).set_index(["group", "metric"])
    pd.testing.assert_frame_equal(gm, again)
    point = group_metrics(y, s, g, threshold=0.5, B=0).set_index(["group", "metric"])
    np.testing.assert_allclose(point.value, gm.value) ; assert point.lo.isna().all()
    assert (gm.loc["a"].n_pairs == 600).all() and (gm.loc["a"].n_pos == 150).all()


# --- clusters and distances ---------------------------------------------------------------------------------------

def test_cluster_indices_are_sklearns():
    rng = np.random.default_rng(4)
    E = np.r_[rng.normal(0, 1, (40, 5)), rng.normal(3, 1, (40, 5))]
    lab = np.repeat(["x", "y"], 40)
    c = cluster_indices(E, lab)
    assert c == pytest.approx(dict(MS=silhouette_score(E, lab), CH=calinski_harabasz_score(E, lab), DB=davies_bouldin_score(E, lab)))
    with pytest.raises(ValueError, match="at least 2 distinct labels"): cluster_indices(E, ["x"] * 80)


def test_centroid_distances_and_grouping():
    E = np.array([[0., 0], [2, 0], [10, 10], [10, 14]])
    d = centroid_distances(E, ["a", "a", "b", "b"])
    np.testing.assert_allclose(d["a"], [1, 1]); np.testing.assert_allclose(d["b"], [2, 2])
    assert list(by_group([1, 2, 3], ["y", "x", "y"], order=["y", "x"])) == ["y", "x"]
    with pytest.raises(ValueError, match="3 values but 2 group labels"): by_group([1, 2, 3], ["a", "b"])


def test_subgroup_labels_summary_and_subsample():
    ix = faces_index(3, 2)
    assert subgroup_labels(ix)[0] == "A/F" and subgroup_labels(ix, "race")[0] == "A"
    row = identity_summary(ix, "toy")
    assert (row["identities"], row["images"], row["images_per_id"]) == (12, 24, 2.0)
    assert row["race (% of IDs)"] == "A 50.0% W 50.0%"
    g = np.array(["a"] * 5 + ["b"] * 95)
    r = stratified_subsample(g, 20, seed=0)
    assert len(r) == 20 and (g[r] == "a").sum() == 5 and len(set(r)) == 20
