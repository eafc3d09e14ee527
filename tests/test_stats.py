"Library tests of paperlib.stats: hand-computed values and scipy/statsmodels as references."
import numpy as np, pandas as pd, pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from paperlib.stats import (CORRECTIONS, correct_pvalues, cohens_d, pairwise_ttests, add_corrected, corrected_ttests,
                            format_p, p_matrix, bootstrap_ci, levene_tests)

P = np.array([0.01, 0.02, 0.03, 0.2])

def test_corrections_hand_and_statsmodels():
    np.testing.assert_allclose(correct_pvalues(P, "sidak"), 1 - (1 - P) ** 4)
    np.testing.assert_allclose(correct_pvalues(P, "bonferroni"), [0.04, 0.08, 0.12, 0.8])
    np.testing.assert_allclose(correct_pvalues(P, "holm"), [0.04, 0.06, 0.06, 0.2])
    np.testing.assert_allclose(correct_pvalues(P, "bh"), [0.04, 0.04, 0.04, 0.2])
    q = np.random.default_rng(1).random(9)
    for ours, sm in CORRECTIONS.items():
        ref = q if sm is None else multipletests(q, method=sm)[1]
        np.testing.assert_allclose(correct_pvalues(q, ours), ref)

@pytest.mark.parametrize("bad", ["hs", "fdr_bh", "Sidak", ""])
def test_bad_correction_names(bad):
    with pytest.raises(ValueError, match="valid: sidak, holm, bonferroni, bh, none"): correct_pvalues(P, bad)

def test_nan_and_range_rejected():
    with pytest.raises(ValueError, match="NaN"): correct_pvalues([0.1, np.nan], "holm")
    with pytest.raises(ValueError, match=r"\[0, 1\]"): correct_pvalues([-0.1, 0.5], "sidak")

def test_student_hand_example_and_welch():
    a, b, c = [1, 2, 3, 4, 5], [3, 4, 5, 6, 7], [0, 10, 2, 14, 3, 9, 1]
    df = pairwise_ttests({"a": a, "b": b, "c": c}, family="f")
    assert df[["a", "b"]].values.tolist() == [["a", "b"], ["a", "c"], ["b", "c"]]
    r = df.iloc[0]
    assert r.t == pytest.approx(-2.0) and r.p == pytest.approx(2 * sps.t.sf(2, 8))
    assert r.cohens_d == pytest.approx(-2 / np.sqrt(2.5)) and cohens_d(b, a) == pytest.approx(2 / np.sqrt(2.5))
    for i, (x, y) in enumerate([(a, b), (a, c), (b, c)]):
        assert df.p_welch[i] == pytest.approx(sps.ttest_ind(x, y, equal_var=False).pvalue)
        assert df.p[i] == pytest.approx(sps.ttest_ind(x, y).pvalue)
    assert abs(df.p[2] - df.p_welch[2]) > 1e-4
    assert pairwise_ttests({"b": b, "c": c}, equal_var=False).p[0] == pytest.approx(df.p_welch[2])

def test_bad_samples():
    with pytest.raises(ValueError, match="at least 2 groups"): pairwise_ttests({"a": [1, 2]})
    with pytest.raises(ValueError, match="1 value"): pairwise_ttests({"a": [1, 2], "b": [3]})
    with pytest.raises(ValueError, match="non-finite"): levene_tests({"a": [1, 2], "b": [3, np.nan]})

def test_family_of_21_sidak():
    rng = np.random.default_rng(0)
    fams = {f"{d} {k}": {g: rng.normal(size=30) for g in gs} for d in "xyz" for k, gs in [("race", "AIBW"), ("gender", "FM")]}
    tab = corrected_ttests(fams)
    assert len(tab) == 21 and set(tab.m) == {21} and set(tab.correction) == {"sidak"}
    np.testing.assert_allclose(tab.p_adj, 1 - (1 - tab.p) ** 21)
    bh = add_corrected(tab, "bh", col="p_welch", out="q")
    np.testing.assert_allclose(bh.q, multipletests(tab.p_welch, method="fdr_bh")[1])
    assert "q" not in tab  # a copy

def test_format_p_boundaries():
    cases = {0: "<0.001", 0.000999: "<0.001", 0.001: "0.001", 0.0034: "0.003", 0.01: "0.01", 0.625: "0.62",
             0.6251: "0.63", 0.994: "0.99", 0.997: "0.997", 0.999: "0.999", 0.9991: ">0.999", 1.0: ">0.999"}
    assert {k: format_p(k) for k in cases} == cases

def test_p_matrix():
    rng = np.random.default_rng(2)
    df = add_corrected(pairwise_ttests({g: rng.normal(size=20) for g in "AIBW"}))
    m = p_matrix(df)
    assert m.shape == (4, 4) and list(m.index) == list("AIBW") == list(m.columns)
    assert all(m.iat[i, j] == "" for i in range(4) for j in range(i + 1))
    assert all(m.iat[i, j] != "" for i in range(4) for j in range(i + 1, 4))
    num = p_matrix(df, "p", fmt=False)
    assert num.loc["I", "W"] == df[(df.a == "I") & (df.b == "W")].p.item() and np.isnan(num.loc["W", "I"])
    swapped = df.rename(columns={"a": "b", "b": "a"})  # (b, a) pairs still land above the diagonal
    sm = p_matrix(swapped)
    assert all(sm.iat[i, j] == "" for i in range(4) for j in range(i + 1))
    assert all(sm.iat[i, j] != "" for i in range(4) for j in range(i + 1, 4))
    with pytest.raises(ValueError, match="several families"):
        p_matrix(pd.concat([df.assign(family="x"), df.assign(family="y")]))

def test_levene_hand_example():
    lv = levene_tests({"a": [1, 2, 3, 4], "b": [2, 4, 6, 9]})
    assert lv.W[0] == pytest.approx(2.5) and lv.p[0] == pytest.approx(sps.f.sf(2.5, 1, 6))
    assert levene_tests({"a": [1, 2, 3, 4], "b": [2, 4, 6, 9]}, center="median").W[0] == pytest.approx(75 / 31)

def test_bootstrap_ci():
    x = np.random.default_rng(5).normal(3, 1, 500)
    est, lo, hi = bootstrap_ci(np.mean, x)
    assert lo < x.mean() < hi and est == pytest.approx(x.mean())
    assert bootstrap_ci(np.mean, x) == (est, lo, hi)
    assert bootstrap_ci(np.mean, x, seed=1) != (est, lo, hi)
    np.testing.assert_allclose(bootstrap_ci(lambda v: v.mean(axis=1), x, vectorized=True), (est, lo, hi))
    ref = sps.bootstrap((x,), np.mean, n_resamples=1000, method="percentile", rng=np.random.default_rng(0))
    np.testing.assert_allclose((lo, hi), (ref.confidence_interval.low, ref.confidence_interval.high))
    with pytest.raises(ValueError, match="same number of rows"): bootstrap_ci(np.mean, x, x[:3])

def test_bootstrap_paired_rows():
    rng = np.random.default_rng(6)
    a = rng.normal(size=200); b = a + rng.normal(0, 0.1, 200)  # strongly paired
    r = lambda a, b: np.corrcoef(a, b)[0, 1]
    est, lo, hi = bootstrap_ci(r, a, b, B=300)
    assert 0.98 < lo <= est <= hi  # resampling a and b independently would destroy the correlation
