"Tests of paperlib.stats' association tests: per-item paired tests and WEAT/SEAT, against hand-computed values."
from itertools import combinations
import numpy as np, pandas as pd, pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from paperlib.stats import (paired_tests, weat_association, wefat_score, weat_effect_size, weat_test)

X = np.array([[2., 4, 6, 8], [0, 2, 0, 4], [5, 5, 6, 9]])
Y = np.array([[1., 2, 3, 4], [1, 1, 2, 2], [5, 4, 4, 5]])


def test_paired_t_hand_values():
    df = paired_tests(X, Y, ["a", "b", "c"], test="t", correction="bh")
    assert list(df.item) == ["a", "b", "c"] and set(df.m) == {3} and set(df.test) == {"t"}
    assert df.statistic[0] == pytest.approx(np.sqrt(15))          # d = 1..4: 2.5 / (sqrt(5/3)/2)
    assert df.p[0] == pytest.approx(2 * sps.t.sf(np.sqrt(15), 3))
    assert df.statistic[1] == pytest.approx(0) and df.p[1] == pytest.approx(1)
    assert df.dz[0] == pytest.approx(2.5 / np.sqrt(5 / 3))
    for k in range(3): assert df.p[k] == pytest.approx(sps.ttest_rel(X[k], Y[k]).pvalue)
    np.testing.assert_allclose(df.p_adj, multipletests(df.p, method="fdr_bh")[1])


def test_paired_wilcoxon_exact_and_holm():
    df = paired_tests(X, Y, test="wilcoxon", correction="holm")
    assert df.p[0] == pytest.approx(0.125)                           # W+ = 10 of 16 sign patterns, two-sided
    np.testing.assert_allclose(df.p_adj, multipletests(df.p, method="holm")[1])
    assert paired_tests(X[:1], Y[:1], test="wilcoxon", alternative="greater").p[0] == pytest.approx(1 / 16)
    assert paired_tests(X[:1], Y[:1], test="wilcoxon", alternative="less").p[0] == pytest.approx(1.0)


def test_paired_no_difference_is_p_one():
    assert paired_tests(Y, Y, test="wilcoxon").p.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("kw,msg", [(dict(test="sign"), "valid: t, wilcoxon"), (dict(correction="fdr"), "valid:"),
                                    (dict(alternative="bigger"), "valid: two-sided, greater, less"),
                                    (dict(items=["a"]), "1 item names for 3 rows")])
def test_paired_bad_arguments(kw, msg):
    with pytest.raises(ValueError, match=msg): paired_tests(X, Y, **kw)


def test_paired_bad_shapes():
    with pytest.raises(ValueError, match="same shape"): paired_tests(X, Y[:, :3])
    with pytest.raises(ValueError, match="finite"): paired_tests(X, np.where(Y == 5, np.nan, Y))


A, B = [[1., 0]], [[0., 1]]
TX, TY = [[1., 0], [1, 1]], [[0., 1], [-1, 1]]


def test_weat_hand_values():
    np.testing.assert_allclose(weat_association(TX + TY, A, B), [1, 0, -1, -np.sqrt(2)], atol=1e-12)
    d = (0.5 + (1 + np.sqrt(2)) / 2) / np.sqrt(3.5 / 3)
    assert weat_effect_size(TX, TY, A, B) == pytest.approx(d)
    r = weat_test(TX, TY, A, B)
    assert r["exact"] and r["n_partitions"] == 6 and r["p"] == pytest.approx(1 / 6)
    assert r["statistic"] == pytest.approx(2 + np.sqrt(2))
    assert weat_test(TY, TX, A, B)["p"] == pytest.approx(1.0)
    assert weat_test(TX, TY, A, B, alternative="two-sided")["p"] == pytest.approx(2 / 6)


def test_wefat_hand_value():
    assert wefat_score([[1., 0]], A, B)[0] == pytest.approx(np.sqrt(2))


def test_weat_exact_against_brute_force_and_sampled():
    rng = np.random.default_rng(0)
    Xw, Yw = rng.normal([1, .3, 0], .7, (6, 3)), rng.normal([.3, 1, 0], .7, (5, 3))
    Aw, Bw = rng.normal([1, 0, 0], .1, (3, 3)), rng.normal([0, 1, 0], .1, (4, 3))
    # brute force from the definition, with unequal set sizes
    cos = lambda u, v: u @ v / np.linalg.norm(u) / np.linalg.norm(v)
    s = lambda w: np.mean([cos(w, a) for a in Aw]) - np.mean([cos(w, b) for b in Bw])
    W = np.vstack([Xw, Yw]); sv = np.array([s(w) for w in W])
    S = lambda ix: sv[list(ix)].sum() - np.delete(sv, list(ix)).sum()
    obs = S(range(6))
    null = [S(ix) for ix in combinations(range(11), 6)]
    p_ref = np.mean([v >= obs - 1e-12 for v in null])
    r = weat_test(Xw, Yw, Aw, Bw)
    assert r["exact"] and r["n_partitions"] == len(null) == 462
    assert r["statistic"] == pytest.approx(obs) and r["p"] == pytest.approx(p_ref)
    assert r["effect_size"] == pytest.approx((sv[:6].mean() - sv[6:].mean()) / sv.std(ddof=1))
    rs = weat_test(Xw, Yw, Aw, Bw, n_samples=400, seed=3)
    assert not rs["exact"] and rs["p"] == pytest.approx(p_ref, abs=0.05) and rs["p"] > 0
    assert rs == weat_test(Xw, Yw, Aw, Bw, n_samples=400, seed=3)


def test_weat_bad_input():
    with pytest.raises(ValueError, match="zero vector"): weat_association([[0., 0]], A, B)
    with pytest.raises(ValueError, match="dimensions differ"): weat_association([[1., 0, 0]], A, B)
    with pytest.raises(ValueError, match="valid: greater, less, two-sided"): weat_test(TX, TY, A, B, alternative="bigger")


# --- paperlib.association: the stratified attribute test, the two-way bootstrap, the planted generator, star tables ---
from paperlib.association import (stratified_attribute_test, stratified_label_test, bootstrap_effect_size, PlantedGeometry,
                                  planted_test, replicate_scores, rejection_rates, StarRule, star_table)


def test_stratified_exact_against_brute_force():
    rng = np.random.default_rng(3)
    D = rng.normal(size=8); is_a = np.array([1, 1, 0, 0, 1, 0, 1, 0], bool); strata = np.array(list("xxxxyyyy"))
    T = lambda a: D[a].mean() - D[~a].mean()
    obs, null = T(is_a), []
    for ax in combinations(range(4), 2):                               # relabel within x (4 items, 2 in A) and within y
        for ay in combinations(range(4, 8), 2):
            a = np.zeros(8, bool); a[list(ax) + list(ay)] = True; null.append(T(a))
    r = stratified_label_test(D, is_a, strata, alternative="greater")
    assert r["exact"] and r["n_relabellings"] == 36
    assert r["p"] == pytest.approx(np.mean(np.array(null) >= obs - 1e-12))


def test_planted_null_calibration_and_power():
    g = PlantedGeometry(("P", "Q"), ("a", "b"), dim=32, seed=0)
    null = rejection_rates(replicate_scores(lambda r: planted_test(g, "P", "Q", "a", "b", 0.0, 300, 20, r), 80, seed=1), n_perm=400)
    strat = null.query("test == 'stratified_attribute' and alpha == 0.05").rate.iloc[0]
    assert strat <= 0.15                                                # calibrated (80 datasets: a loose band)
    power = rejection_rates(replicate_scores(lambda r: planted_test(g, "P", "Q", "a", "b", 0.2, 300, 20, r), 20, seed=2), n_perm=400)
    assert power.query("test == 'stratified_attribute' and alpha == 0.05").rate.iloc[0] >= 0.9


def test_bootstrap_interval_covers_a_strong_effect_and_not_zero():
    g = PlantedGeometry(("P", "Q"), ("a", "b"), dim=32, seed=0)
    t = planted_test(g, "P", "Q", "a", "b", 0.3, 200, 40, np.random.default_rng(0))
    b = bootstrap_effect_size(t["X"], t["Y"], t["A"], t["B"], t["strata_a"], t["strata_b"], n_boot=300)
    assert 0 < b["low"] < b["d"] < b["high"]
    assert stratified_attribute_test(t["X"], t["Y"], t["A"], t["B"], t["strata_a"], t["strata_b"], n_samples=500)["p"] < 0.01


def test_star_table_holm_and_missing_column():
    long = pd.DataFrame(dict(test=["t1", "t2"], model=["M", "M"], d=[0.5, 0.2], p=[0.0006, 0.0009]))   # Holm: 0.0012, 0.0012
    assert star_table(long, "test", "model").M.tolist() == ["0.500*", "0.200*"]
    assert star_table(long, "test", "model", rules=[StarRule("*", correction="holm")]).M.tolist() == ["0.500", "0.200"]
    with pytest.raises(KeyError, match="no column 'q'"): star_table(long, "test", "model", rules=[StarRule("*", "q")])
