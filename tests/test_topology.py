"Library tests of paperlib.topology: gudhi against the exact MST route and hand-computed examples."
import numpy as np, pytest, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from paperlib.topology import h0_death_times, persistence_diagram, h0_barcode, death_time_density, H0_BACKENDS

@pytest.mark.parametrize("backend", H0_BACKENDS)
def test_hand_examples(backend):
    assert h0_death_times([[0.], [1.], [3.], [6.]], backend).tolist() == [1.0, 2.0, 3.0]
    assert h0_death_times([[0, 0], [1, 0], [0, 1], [1, 1]], backend).tolist() == [1.0, 1.0, 1.0]
    assert h0_death_times([[0, 0], [3, 4]], backend).tolist() == [5.0]

@pytest.mark.parametrize("n,d", [(3, 2), (50, 3), (150, 32)])
def test_gudhi_equals_mst(n, d):
    E = np.random.default_rng(n).normal(size=(n, d))
    g, m = h0_death_times(E), h0_death_times(E, "mst")
    assert len(g) == len(m) == n - 1 and np.all(np.diff(g) >= 0)
    np.testing.assert_allclose(g, m, rtol=0, atol=1e-12)

def test_duplicates_and_tiny_distances():
    E = np.random.default_rng(0).normal(size=(40, 4))
    dup = np.vstack([E, E[:5], E[:1] + 1e-10])
    g, m = h0_death_times(dup), h0_death_times(dup, "mst")
    assert len(g) == len(m) == len(dup) - 1
    assert (g == 0).sum() == (m == 0).sum() == 5
    np.testing.assert_allclose(g, m, rtol=0, atol=1e-15)
    assert 0 < m[5] < 1e-9  # a distance far below scipy's dense-graph tolerance survives
    for be in H0_BACKENDS: assert h0_death_times(np.zeros((4, 2)), be).tolist() == [0, 0, 0]

def test_scaling_and_determinism():
    E = np.random.default_rng(3).normal(size=(60, 5))
    np.testing.assert_allclose(h0_death_times(3 * E), 3 * h0_death_times(E))
    assert np.array_equal(h0_death_times(E, "mst"), h0_death_times(E, "mst"))
    assert np.array_equal(h0_death_times(E), h0_death_times(E))

def test_bad_input():
    E = np.zeros((5, 2))
    with pytest.raises(ValueError, match="valid: gudhi, mst"): h0_death_times(E, "alpha")
    with pytest.raises(ValueError, match="2-D"): h0_death_times(np.zeros(5))
    with pytest.raises(ValueError, match="at least 2 points"): h0_death_times(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="non-finite"): h0_death_times([[0, 1], [np.inf, 0]])

def test_plots():
    rng = np.random.default_rng(1)
    deaths = {"A": h0_death_times(rng.normal(0, 1, (30, 3))), "W": h0_death_times(rng.normal(0, 2, (30, 3)))}
    ax = persistence_diagram(deaths)
    assert len(ax.collections) == 4 and ax.collections[0].get_offsets().shape == (29, 2)
    ax = h0_barcode(deaths, max_bars=10)
    assert [len(c.get_segments()) for c in ax.collections] == [10, 10]
    ax = death_time_density(deaths)
    assert len(ax.lines) == 2 and [t.get_text() for t in ax.get_legend().get_texts()] == ["A (n=30)", "W (n=30)"]
    with pytest.raises(ValueError, match="finite"): h0_barcode({"A": [np.nan, 1.0]})
    plt.close("all")
