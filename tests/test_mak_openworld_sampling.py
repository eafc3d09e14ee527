"""Tests of the MAK paper: the open-world digits generator, the selection methods (exactly K picks, bad budgets and
ratios refused, the pool's labels never read outside the oracle), and the real-data path on a tiny ImageNet-LT written
in the authors' layout (`write_tiny_dataset`), with an image that does not decode."""
from pathlib import Path

import numpy as np
import pytest
import torch

from paperlib.datasets import read_imagenet_lt, write_tiny_imagenet_lt
from paperlib.papers.mak_openworld_sampling import (
    DIGIT_POOLS, METHODS, OpenWorld, evaluate, few_shot_draws, mak_select, open_world_digits, pick_composition, pick_settings,
    pool_scores, real_world, select, tailness, train_simclr)

SETTINGS = [(p, b, m) for p in DIGIT_POOLS for b in (0.8, 1.6) for m in (*METHODS, "oracle") if b == 0.8 or m in ("random", "MAK")]


def write_tiny_dataset(data_root: Path) -> None:
    """ImageNet train images of six classes (one file not an image), a few Places scenes and the authors' split lists,
    tiny, under data_root; the pools list every image of their three classes, so the 1.6x budget fits."""
    write_tiny_imagenet_lt(data_root)
    root = Path(data_root)
    in900 = root / "imagenet_lt_splits/imagenet-900/ImageNet_900_train.txt"
    mix = root / "imagenet_lt_splits/imagenet-places-mix/imageNet_200_places_200_mix.txt"
    label = {p.split("/")[1]: l for p, l in (x.split() for x in in900.read_text().splitlines())}
    files = sorted(f"train/{w}/{f.name}" for w in label for f in (root / "imagenet/train" / w).iterdir())
    in900.write_text("".join(f"{f} {label[f.split('/')[1]]}\n" for f in files))
    places = [x for x in mix.read_text().splitlines() if x.endswith(" places")]
    mix.write_text("".join(f"{f} {label[f.split('/')[1]]} imagenet\n" for f in files if "broken" not in f) + "\n".join(places) + "\n")


@pytest.fixture(scope="module")
def scored():
    "One replicate of the digits, a seed model trained a few steps, and the scores of its first pool."
    W = open_world_digits(3)
    run = train_simclr("mlp", W.X_seed, epochs=2, batch=64, lr=1e-3, tau=0.2, aug=dict(shift=1, noise=0.1), seed=3)
    pool = next(iter(W.pools))
    return W, pool, pool_scores(run.model, W.X_seed, W.pools[pool], views=3, aug=dict(shift=1, noise=0.1), tau=0.2, partitions=2, seed=3)


def _shuffled(W: OpenWorld, rng) -> OpenWorld:
    return OpenWorld(W.X_seed, W.pools, W.X_train, W.y_train, W.X_test, W.y_test, W.seed_labels,
                     {p: rng.permutation(l) for p, l in W.pool_labels.items()})


def test_pool_labels_never_choose_the_picks(scored):
    "Shuffling the pool's labels leaves every method's picks unchanged; only the oracle (the headroom bound) moves."
    W, pool, sc = scored
    a = pick_settings(W, pool, sc, SETTINGS, seed=5)
    b = pick_settings(_shuffled(W, np.random.default_rng(0)), pool, sc, SETTINGS, seed=5)
    assert set(a) == {s for s in SETTINGS if s[0] == pool}
    for key in a:
        if key[2] != "oracle": assert np.array_equal(a[key], b[key]), key
    assert not np.array_equal(a[pool, 0.8, "oracle"], b[pool, 0.8, "oracle"])


def test_every_method_picks_exactly_k_distinct(scored):
    W, pool, sc = scored
    for (p, b, m), picks in pick_settings(W, pool, sc, SETTINGS, seed=1).items():
        k = round(b * len(W.X_seed))
        assert len(picks) == len(set(picks.tolist())) == k and picks.max() < len(W.pools[pool]), (b, m)


def test_proximity_alone_avoids_outliers_more_than_k_center(scored):
    "The generator's outliers are far from the seed in a trained model's features: proximity picks fewer than K-center."
    W, pool, sc = scored
    picks = pick_settings(W, pool, sc, SETTINGS, seed=1)
    comp = {m: pick_composition(picks[pool, 0.8, m], W.pool_labels[pool], W.groups)["ood"] for m in ("P", "K-center")}
    assert comp["P"] < comp["K-center"]


@pytest.mark.parametrize("kw, msg", [(dict(k=10_000), "pool size"), (dict(alpha=1.5), "[0, 1]"), (dict(alpha=-0.1), "[0, 1]"),
                                     (dict(ratio=0.5), "must be >= 1"), (dict(k=500, ratio=3.0), "lower the ratio or K")])
def test_bad_budget_alpha_or_ratio_is_refused(scored, kw, msg):
    W, pool, sc = scored
    args = dict(k=50, alpha=0.5, ratio=1.5) | kw
    with pytest.raises(ValueError, match=msg.replace("[", r"\[").replace("]", r"\]")):
        mak_select(sc["seed_feats"], sc["pool_feats"], sc["ecle"], sc["dist"], **args)


def test_unknown_method_names_the_valid_ones(scored):
    with pytest.raises(ValueError, match="valid: random, K-center, MAK, T, P, T\\+P"):
        select("core-set", 5, scored[2], np.random.default_rng(0))


def test_ecle_is_steadier_than_a_single_pass(scored):
    "Two ECLE estimates from different augmentation draws agree better than two single-pass losses do."
    W, pool, sc = scored
    from paperlib.papers.mak_openworld_sampling import projection_views
    run = train_simclr("mlp", W.X_seed, epochs=2, batch=64, lr=1e-3, tau=0.2, aug=dict(shift=1, noise=0.1), seed=3)
    t = [tailness(projection_views(run.model, W.pools[pool], 4, dict(shift=1, noise=0.1), s), 0.2, 256, 3, s) for s in (1, 2)]
    r = lambda k: np.corrcoef(t[0][k], t[1][k])[0, 1]
    assert r("ecle") > r("single")


def test_generator_is_seeded_and_long_tailed():
    a, b, c = open_world_digits(1), open_world_digits(1), open_world_digits(2)
    assert np.array_equal(a.X_seed, b.X_seed) and np.array_equal(a.pools["IPM-like"], b.pools["IPM-like"])
    assert not np.array_equal(a.seed_labels, c.seed_labels)
    assert sorted(a.counts.values(), reverse=True) == [80, 57, 41, 29, 21, 15, 11, 8, 6, 4]
    lab = {p: l[l >= 0] for p, l in a.pool_labels.items()}
    assert np.array_equal(lab["IN900-like"], lab["IPM-like"])                         # both pools share their digits
    assert sorted(np.bincount(lab["IN900-like"]), reverse=True)[0] == 200 and min(np.bincount(lab["IN900-like"])) == 10
    orders = [np.argsort(-np.bincount(open_world_digits(r).pool_labels["IPM-like"].clip(0))) for r in range(4)]
    seeds = [sorted(open_world_digits(r).counts, key=open_world_digits(r).counts.get, reverse=True) for r in range(4)]
    assert any(o[0] != s[0] for o, s in zip(orders, seeds))                           # the pool's head is not the seed's


def test_few_shot_draws_are_balanced():
    y = np.repeat(np.arange(4), 7)
    for d in few_shot_draws(y, 3, 4, np.random.default_rng(0)):
        assert np.bincount(y[d]).tolist() == [3, 3, 3, 3]


# --- real data ---------------------------------------------------------------------------------------------------------

def test_real_world_from_the_tiny_lists(tmp_path):
    write_tiny_dataset(tmp_path)
    lists = read_imagenet_lt(tmp_path)
    W = real_world(lists, 16, None, 0)
    assert W.X_seed.shape[1:] == (3, 16, 16) and float(W.X_seed.max()) <= 1.0
    assert set(W.pools) <= {"IN900", "IPM"} and "IN900" in W.pools
    assert any("undecodable" in n for n in W.notes)                                   # skipped and counted, not fatal
    n_listed = len(lists["in900"])
    assert len(W.pools["IN900"]) == n_listed - sum(int(n.split(": ")[1].split()[0]) for n in W.notes if n.startswith("IN900"))
    if "IPM" in W.pools: assert (W.pool_labels["IPM"] == -1).any()                   # the Places images are the mix's outliers
    assert set(np.unique(W.seed_labels)) <= set(np.unique(W.y_test))
    ev = evaluate(W.X_train.reshape(len(W.X_train), -1), W.y_train, W.X_test.reshape(len(W.X_test), -1), W.y_test, W.groups,
                  few_shot_draws(W.y_train, 1, 1, np.random.default_rng(0)))
    assert 0 <= ev["few-shot"]["All"] <= 100


def test_a_list_line_naming_a_missing_image_is_an_error(tmp_path):
    from paperlib.data import DataError
    write_tiny_dataset(tmp_path)
    listed = (tmp_path / "imagenet_lt_splits").rglob("imageNet_100_LT_train.txt")
    lst = next(listed)
    first = lst.read_text().splitlines()[0].split()[0]
    (tmp_path / "imagenet" / first).unlink()
    with pytest.raises(DataError, match=r"imageNet_100_LT_train.txt.*(row|line) 1"):
        read_imagenet_lt(tmp_path)
