"Library tests of paperlib.plots: the artists drawn, colour stability and bad input."
import numpy as np, pandas as pd, pytest, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.colors import to_hex
from matplotlib.container import BarContainer, ErrorbarContainer
from paperlib.plots import GROUP_COLORS, group_palette, kde_by_group, bars_with_ci, panel_grid

@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")

def test_palette_stable():
    assert group_palette(["W", "A"]) == {"W": GROUP_COLORS["W"], "A": GROUP_COLORS["A"]}
    assert group_palette(["Male"])["Male"] == group_palette(["M", "F"])["M"]
    pal = group_palette([f"tone {i}" for i in range(1, 7)])
    assert len(set(pal.values())) == 6
    assert group_palette([f"tone {i}" for i in range(6, 0, -1)]) == pal
    many = group_palette(range(20))
    assert len(set(many.values())) == 20  # collisions are resolved within a figure

def test_kde_by_group():
    rng = np.random.default_rng(0)
    s = {"A": rng.normal(0, 1, 200), "B": rng.normal(3, 0.5, 200), "W": rng.normal(1, 2, 200)}
    ax = kde_by_group(s, xlabel="d", title="t")
    kde_by_group(s, ax, linestyle="--", label_suffix=" imp")
    assert len(ax.lines) == 6 and [l.get_linestyle() for l in ax.lines] == ["-"] * 3 + ["--"] * 3
    assert [to_hex(l.get_color()) for l in ax.lines[:3]] == [GROUP_COLORS[g] for g in "ABW"]
    assert len(ax.get_legend().get_texts()) == 6 and ax.get_legend().get_texts()[3].get_text() == "A imp"
    for l in ax.lines:
        x, y = l.get_data(); assert abs(np.trapezoid(y, x) - 1) < 0.02
    with pytest.raises(ValueError, match="at least 2"): kde_by_group({"A": [1.0]})
    with pytest.raises(ValueError, match="non-empty"): kde_by_group({})

def test_bars_with_ci():
    df = pd.DataFrame(dict(g=["A", "I", "W"], v=[0.5, 0.4, 0.2], lo=[0.45, 0.3, 0.2], hi=[0.6, 0.41, 0.3]))
    ax = bars_with_ci(df, "g", "v", "lo", "hi")
    bars = next(c for c in ax.containers if isinstance(c, BarContainer))
    assert len(bars.patches) == 3 and [p.get_height() for p in bars.patches] == [0.5, 0.4, 0.2]
    segs = next(c for c in ax.containers if isinstance(c, ErrorbarContainer)).lines[2][0].get_segments()
    np.testing.assert_allclose([s[0][1] for s in segs], df.lo); np.testing.assert_allclose([s[1][1] for s in segs], df.hi)
    assert to_hex(bars.patches[2].get_facecolor()) == GROUP_COLORS["W"]
    with pytest.raises(ValueError, match="lo <= hi"): bars_with_ci(df.assign(lo=df.hi + 0.01), "g", "v", "lo", "hi")
    # a percentile interval that excludes its estimate is drawn where it is, not refused
    ax = bars_with_ci(df.assign(lo=df.v + 0.01, hi=df.v + 0.05), "g", "v", "lo", "hi")
    segs = next(c for c in ax.containers if isinstance(c, ErrorbarContainer)).lines[2][0].get_segments()
    np.testing.assert_allclose([s[0][1] for s in segs], df.v + 0.01)
    with pytest.raises(KeyError, match="not in"): bars_with_ci(df, "g", "v", "low", "hi")

def test_panel_grid():
    fig, axes = panel_grid(4, ncols=3, size=(2, 1))
    assert len(axes) == 4 and len(fig.axes) == 4 and tuple(fig.get_size_inches()) == (6, 2)
    with pytest.raises(ValueError): panel_grid(0)
