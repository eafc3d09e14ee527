"Tests of paperlib.metric: losses by name, MAP@R / R-precision / P@1 against hand-computed values, the brute-force cross-check, the training loop, the multi-label probe."
import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from paperlib.metric import (LOSSES, make_loss, check_loss, is_classification_loss, retrieval_metrics, map_at_r,
                             r_precision, precision_at_1, map_at_r_torch, random_map_at_r, EmbeddingCNN, embed,
                             batches, train_embedder, mean_std, repeated_metrics, LossTerm, make_dml_loss,
                             make_dml_miner, multilabel_probe, majority_accuracy)


def test_unknown_loss_lists_valid_ones():
    with pytest.raises(ValueError) as e:
        make_loss("lifted")
    for name in LOSSES:
        assert name in str(e.value)
    assert is_classification_loss("arcface") and not is_classification_loss("contrastive")


@pytest.mark.parametrize("name", list(LOSSES))
def test_every_loss_trains_a_gradient(name):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(12, 6, generator=g, requires_grad=True)
    loss = make_loss(name, num_classes=3, embedding_size=6)
    out = loss(F.normalize(w, dim=1), torch.arange(3).repeat_interleave(4))
    out.backward()
    assert torch.isfinite(out) and w.grad.abs().sum() > 0


def test_contrastive_by_hand():
    # two identical positives (d = 0) and one negative at distance sqrt(2); pos_margin 0, neg_margin 2:
    # the only non-zero terms are the 2 ordered negative pairs of each anchor... each [2 - sqrt(2)]_+
    x = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    l = make_loss("contrastive", pos_margin=0.0, neg_margin=2.0)(x, torch.tensor([0, 0, 1]))
    assert l.item() == pytest.approx(2 - 2 ** 0.5, abs=1e-5)


def test_map_at_r_hand_example():
    # angles 0, 12, 20, 90, 100 deg with classes A A B B A: per-query MAP@R 0.5, 0.25, 0, 0, 0
    ang = np.deg2rad([0, 12, 20, 90, 100])
    E = np.stack([np.cos(ang), np.sin(ang)], 1)
    y = np.array([0, 0, 1, 1, 0])
    m = retrieval_metrics(E, y)
    assert m["map_at_r"] == pytest.approx(0.15)
    assert m["r_precision"] == pytest.approx(0.2)
    assert m["precision_at_1"] == pytest.approx(0.2)
    assert map_at_r(E, y) == pytest.approx(0.15) and r_precision(E, y) == pytest.approx(0.2)
    assert precision_at_1(E, y) == pytest.approx(0.2)
    assert map_at_r_torch(E, y) == pytest.approx(0.15)


def test_map_at_r_second_hand_example():
    # query 0 of class A, R = 2: ranking A, B, A -> (1/1 + 2/3) / 2; symmetric setup checked with the brute force
    E = np.array([[1.0, 0.0], [0.99, 0.141], [0.9, 0.436], [0.7, 0.714], [-1.0, 0.0]])
    y = np.array([0, 0, 1, 0, 2])
    # query 0: others by similarity 1 (A), 2 (B), 3 (A), 4 -> top-2: A, B -> (1 + 0) / 2 = 0.5
    # the class-2 query has R = 0 and is not counted by either implementation
    pml = map_at_r(E[:4], y[:4])
    assert pml == pytest.approx(map_at_r_torch(E[:4], y[:4]), abs=1e-6)


def test_perfect_and_worst_embeddings():
    y = np.repeat(np.arange(5), 4)
    perfect = np.eye(5)[y]
    assert map_at_r(perfect, y) == pytest.approx(1.0)
    assert map_at_r_torch(perfect, y) == pytest.approx(1.0)


def test_brute_force_matches_pml_on_random_data():
    g = torch.Generator().manual_seed(5)
    E, y = torch.randn(500, 16, generator=g), torch.randint(0, 20, (500,), generator=g)
    assert map_at_r_torch(E, y, chunk=77) == pytest.approx(map_at_r(E, y), abs=1e-5)


def test_bad_inputs():
    with pytest.raises(ValueError, match="4 embeddings but 3 labels"):
        map_at_r(np.eye(4), [0, 0, 1])
    with pytest.raises(ValueError, match="single item"):
        map_at_r(np.eye(3), [0, 1, 2])


def test_random_level_is_low():
    y = np.repeat(np.arange(20), 5)
    r = random_map_at_r(y, draws=10)
    assert 0 < r < 0.05


def test_sampler_batches_m_per_class_and_seeded():
    y = np.repeat(np.arange(12), 5)
    b = next(batches(y, 16, 4, seed=1))
    assert sorted(np.bincount(y[b])[np.bincount(y[b]) > 0]) == [4, 4, 4, 4]
    assert np.array_equal(b, next(batches(y, 16, 4, seed=1)))
    assert not np.array_equal(b, next(batches(y, 16, 4, seed=2)))
    with pytest.raises(ValueError, match="cannot fill a batch"):
        next(batches(np.arange(3), 8, 2))


def _toy(seed=0):
    g = torch.Generator().manual_seed(seed)
    protos = torch.rand(10, 3, 8, 8, generator=g)
    y = torch.arange(10).repeat_interleave(8)
    return protos[y] + 0.3 * torch.randn(len(y), 3, 8, 8, generator=g), y


@pytest.mark.parametrize("loss", ["triplet", "arcface"])
def test_training_improves_and_is_deterministic(loss):
    X, y = _toy()
    tr = (torch.arange(len(y)) % 8) < 5
    val = lambda m: map_at_r(embed(m, X[~tr]), y[~tr])
    torch.manual_seed(0)
    before = val(EmbeddingCNN((8, 16), dim=16, in_size=8))
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        runs.append(train_embedder(EmbeddingCNN((8, 16), dim=16, in_size=8), loss, X[tr], y[tr], steps=40,
                                   batch_size=8, validate=val, val_every=10, seed=3, progress=False))
    assert runs[0].best_score > before
    assert runs[0].history.equals(runs[1].history)
    # the returned model is the best validated one
    assert val(runs[0].model) == pytest.approx(runs[0].best_score)


def test_early_stopping_with_patience():
    X, y = _toy()
    calls = []
    def val(m):
        calls.append(1)
        return 0.5 if len(calls) == 1 else 0.1          # never improves after the first validation
    r = train_embedder(EmbeddingCNN((8, 16), dim=16, in_size=8), "contrastive", X, y, steps=100, batch_size=16,
                       validate=val, val_every=5, patience=2, progress=False)
    assert r.best_step == 5 and len(r.history) == 3


class _TwoHeads(torch.nn.Module):
    "A shared trunk with two normalised heads (the shape of a model that a term reads a second embedding from)."
    def __init__(self):
        super().__init__()
        self.trunk = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 32), torch.nn.ReLU())
        self.a, self.b, self.dim = torch.nn.Linear(32, 8), torch.nn.Linear(32, 8), 8

    def both(self, x):
        h = self.trunk(x)
        return F.normalize(self.a(h), dim=1), F.normalize(self.b(h), dim=1)

    def forward(self, x): return self.both(x)[0]


class _Apart(LossTerm):
    "The second head's embeddings pushed off the first's: weight x mean cosine of the two, with a module of its own."
    names = ("cos",)
    def __init__(self, w): self.w, self.proj = w, None
    def build(self, model, device):
        if self.w == 0: return []
        self.proj = torch.nn.Linear(model.dim, model.dim).to(device)
        return [dict(params=self.proj.parameters(), lr=1e-3)]
    def forward(self, model, x):
        e, self.other = model.both(x)
        return e
    def loss(self, emb, idx, step):
        if self.w == 0: return dict(cos=(0.0, 0.0))
        return dict(cos=(self.w, (emb * F.normalize(self.proj(self.other), dim=1)).sum(1).mean()))


def _reference_loop(X, y, steps, seed):
    "train_embedder's loop written out (margin loss, distance-weighted miner, no validation): what `terms=[]` must equal."
    torch.manual_seed(seed)
    model = _TwoHeads()
    loss_fn = make_dml_loss("margin", num_classes=len(torch.unique(y)), embedding_size=8)
    mine = make_dml_miner("distance_weighted")
    opt = torch.optim.Adam([dict(params=model.parameters(), lr=1e-3, weight_decay=4e-4),
                            dict(params=loss_fn.parameters(), lr=5e-4)])
    stream = batches(y.numpy(), 16, 4, seed)
    for _ in range(steps):
        model.train()
        idx = torch.from_numpy(next(stream))
        emb = model(X[idx])
        l = loss_fn(emb, y[idx], mine(emb, y[idx]))
        opt.zero_grad(); l.backward(); opt.step()
    return model.state_dict()


def test_terms_leave_the_loop_as_it_was():
    X, y = _toy()
    kw = dict(steps=15, batch_size=16, m=4, lr=1e-3, loss_lr=5e-4, weight_decay=4e-4, miner="distance_weighted", seed=4,
              progress=False, val_every=4)
    ref = _reference_loop(X, y, 15, 4)
    runs = {name: train_embedder(_TwoHeads, "margin", X, y, terms=t, **kw) for name, t in
            (("plain", []), ("zero", [_Apart(0.0)]), ("on", [_Apart(2.0)]))}
    for name in ("plain", "zero"):            # no term, or a term of weight 0 that builds nothing: the loop's weights, to the bit
        w = runs[name].model.state_dict()
        assert all(torch.equal(ref[k], w[k]) for k in ref), name
    assert not torch.equal(runs["on"].model.a.weight, runs["plain"].model.a.weight)
    assert list(runs["on"].history.columns) == ["step", "loss", "val", "main", "cos"]
    assert runs["on"].history.step.tolist() == [4, 8, 12, 15] and runs["plain"].history.step.tolist() == [4, 8, 12]
    assert (runs["zero"].history.cos == 0).all() and np.isfinite(runs["on"].history.cos).all()
    # integer images are cast per batch: the same weights as the float images
    Xi = (X.clamp(0, 1) * 255).round().to(torch.uint8)
    a, b = (train_embedder(_TwoHeads, "margin", x, y, **kw).model.state_dict() for x in (Xi, Xi.float()))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_bad_terms_are_named():
    X, y = _toy()
    for terms, msg in (([object()], "LossTerm"), ([_Apart(1.0), _Apart(1.0)], "repeat or are taken"),
                       ([type("_Main", (_Apart,), dict(names=("main",)))(1.0)], "taken"),
                       ([_Apart(1.0), type("_B", (_Apart,), dict(names=("b",)))(1.0)], "at most one term")):
        with pytest.raises((TypeError, ValueError), match=msg):
            train_embedder(_TwoHeads, "margin", X, y, terms=terms, steps=1, progress=False)


def test_repeated_metrics_and_mean_std():
    X, y = _toy()
    df = repeated_metrics(EmbeddingCNN((8, 16), dim=16, in_size=8), lambda s: X + 0.05 * s, y, seeds=range(4))
    assert len(df) == 4 and df.map_at_r.between(0, 1).all()
    assert mean_std([2.0, 4.0]) == (3.0, pytest.approx(2 ** 0.5))
    assert mean_std([1.0]) == (1.0, 0.0)


# --- the multi-label linear probe -------------------------------------------------------------------------------------

def _attrs(n, seed, flip=False, prevalence=(0.1, 0.2, 0.3, 0.4, 0.5)):
    # features (2Y - 1) M + noise: every attribute linearly readable, prevalences as unbalanced as CelebA's
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, len(prevalence))) < np.array(prevalence)).astype(int)
    E = (2 * Y - 1) @ np.random.default_rng(99).normal(size=(len(prevalence), 16)) + rng.normal(0, 1, (n, 16))
    return E.astype(np.float32), (1 - Y if flip else Y)


def test_probe_reads_separable_attributes():
    fit, val, test = _attrs(2000, 0), _attrs(500, 1), _attrs(1000, 2)
    r = multilabel_probe(*fit, *val, *test, batch=64)
    majority = majority_accuracy(fit[1], test[1])
    assert r["mean_acc"] > 0.95 and majority["mean_acc"] < 0.75
    assert r["acc"].shape == (5,) and r["mean_acc"] == pytest.approx(r["acc"].mean())
    assert r["image_acc"].shape == (1000,) and r["image_acc"].mean() == pytest.approx(r["mean_acc"])
    assert ((r["pred"] == test[1]).mean(0) == pytest.approx(r["acc"]))
    assert r["best_epoch"] == int(np.argmin(r["val_loss"])) + 1


def test_probe_stops_early_when_val_loss_rises():
    # validation labels flipped: every epoch of learning the fit labels raises the val loss
    fit, test = _attrs(2000, 0), _attrs(1000, 2)
    r = multilabel_probe(*fit, *_attrs(500, 1, flip=True), *test, batch=64, epochs=15, patience=3)
    assert r["best_epoch"] == 1 < 15 and len(r["val_loss"]) == 1 + 3
    assert np.all(np.diff(r["val_loss"]) > 0)
    # the weights of epoch 1 are kept, not those of epoch 4: a probe of one epoch predicts the same
    one = multilabel_probe(*fit, *_attrs(500, 1, flip=True), *test, batch=64, epochs=1)
    assert np.array_equal(one["pred"], r["pred"])


def test_probe_is_seeded():
    fit, val, test = _attrs(600, 0), _attrs(200, 1), _attrs(300, 2)
    a, b, c = (multilabel_probe(*fit, *val, *test, epochs=3, seed=s) for s in (0, 0, 1))
    assert a["val_loss"] == b["val_loss"] and np.array_equal(a["pred"], b["pred"])
    assert a["val_loss"] != c["val_loss"]


def test_majority_accuracy_by_hand():
    # fit prevalences 3/4, 1/4 and 2/4 (a tie): predict 1, 0, 0; on the test rows that is right 2/3, 2/3, 1/3
    Y_fit = np.array([[1, 0, 1], [1, 0, 0], [1, 1, 1], [0, 0, 0]])
    Y_test = np.array([[1, 0, 0], [1, 1, 1], [0, 0, 1]])
    m = majority_accuracy(Y_fit, Y_test)
    assert m["acc"] == pytest.approx([2 / 3, 2 / 3, 1 / 3]) and m["mean_acc"] == pytest.approx(5 / 9)


def test_probe_bad_input_is_named():
    fit, val, test = _attrs(100, 0), _attrs(50, 1), _attrs(50, 2)
    bad = fit[1].copy(); bad[7, 3] = 2
    with pytest.raises(ValueError, match=r"Y_fit: column 3 holds 2 \(row 7\); attributes must be 0 or 1"):
        multilabel_probe(fit[0], bad, *val, *test)
    with pytest.raises(ValueError, match=r"Y_val: column 0 \('Bald'\) holds -1"):
        multilabel_probe(*fit, val[0], pd.DataFrame(2 * val[1] - 1, columns=["Bald", "b", "c", "d", "e"]), *test)
    with pytest.raises(ValueError, match=r"E_test \(49, 16\) and Y_test \(50, 5\): one row of features per row of labels"):
        multilabel_probe(*fit, *val, test[0][1:], test[1])
    with pytest.raises(ValueError, match=r"differ between the sets: \{'fit': \(16, 5\), 'val': \(16, 5\), 'test': \(16, 4\)\}"):
        multilabel_probe(*fit, *val, test[0], test[1][:, :4])
    with pytest.raises(ValueError, match="Y_test 4: they must agree"):
        majority_accuracy(fit[1], test[1][:, :4])
    with pytest.raises(ValueError, match="epochs: 0; a whole number of at least 1"):
        multilabel_probe(*fit, *val, *test, epochs=0)
