"Tests of paperlib.contrastive: the losses against pytorch-metric-learning where they coincide (other similarities included), bad input, the augmentations (RGB views included), the training loop's options, the geometry statistics."
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from paperlib.contrastive import (view_labels, CONTRASTIVE_LOSSES, contrastive_loss, supcon_loss, simclr_loss, attract_loss, repel_loss,
                                  spread_loss, check_alpha, augment, two_views, ContrastiveCNN, train_contrastive, ecle,
                                  head_predict, linear_probe, intra_class_cosine, centre_similarity, stratum_geometry,
                                  RGB_PRESETS, rgb_view, rgb_two_views)


def _batch(b=6, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(2 * b, d, generator=g)


def test_unknown_loss_lists_valid_ones():
    with pytest.raises(ValueError) as e:
        contrastive_loss("triplet", _batch(), torch.zeros(6))
    for name in CONTRASTIVE_LOSSES:
        assert name in str(e.value)


@pytest.mark.parametrize("alpha", [-0.01, 1.01, 5])
def test_alpha_outside_unit_interval_refused(alpha):
    with pytest.raises(ValueError, match=r"alpha must lie in \[0, 1\]"):
        spread_loss(_batch(), torch.zeros(6), alpha=alpha)
    with pytest.raises(ValueError, match="alpha must lie"):
        check_alpha(alpha)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_attract_equals_pml_supcon_with_one_positive(seed):
    z = _batch(seed=seed)
    y = torch.arange(6)                      # every image its own class: P(i, B) = {x_i^aug}
    assert torch.allclose(attract_loss(z, y), supcon_loss(z, y), atol=1e-5)
    assert torch.allclose(attract_loss(z, y), simclr_loss(z), atol=1e-5)


@pytest.mark.parametrize("b", [3, 17])
def test_simclr_equals_pml_ntxent(b):
    from pytorch_metric_learning.losses import NTXentLoss
    z = torch.nn.functional.normalize(torch.randn(2 * b, 8, generator=torch.Generator().manual_seed(b)), dim=1)
    assert torch.allclose(simclr_loss(z, tau=0.3), NTXentLoss(temperature=0.3)(z, view_labels(torch.arange(b))), atol=1e-6)


def test_repel_equals_pml_ntxent_with_one_class():
    z = _batch()
    assert torch.allclose(repel_loss(z, torch.zeros(6)), simclr_loss(z), atol=1e-5)
    assert float(attract_loss(z, torch.zeros(6))) == pytest.approx(0.0, abs=1e-6)


def test_attract_below_supcon_with_several_positives():
    z, y = _batch(), torch.tensor([0, 0, 0, 1, 1, 1])
    assert attract_loss(z, y) < supcon_loss(z, y)


def test_spread_mixes_attract_and_repel():
    z, y = _batch(), torch.tensor([0, 1, 0, 1, 2, 2])
    a, r = attract_loss(z, y), repel_loss(z, y)
    assert torch.allclose(spread_loss(z, y, alpha=0.3), 0.3 * a + 0.7 * r, atol=1e-6)


def test_collapse_minimises_supcon_not_repel():
    # a collapsed batch (one point per class) gives a lower SupCon than a spread one; L_repel prefers the spread one
    y = torch.tensor([0, 0, 1, 1])
    collapsed = torch.tensor([[1., 0], [1, 0], [-1, 0], [-1, 0]]).repeat(2, 1)
    spread = torch.tensor([[1., .6], [1, -.6], [-1, .6], [-1, -.6]]).repeat(2, 1)
    assert supcon_loss(collapsed, y, 0.5) < supcon_loss(spread, y, 0.5)
    assert repel_loss(spread, y, 0.5) < repel_loss(collapsed, y, 0.5)


def test_bad_stack_named():
    with pytest.raises(ValueError, match="stack the two views"):
        attract_loss(torch.randn(5, 3), torch.arange(2))


def test_augment_shift_keeps_pixels_and_is_seeded():
    X = torch.arange(3 * 36, dtype=torch.float32).reshape(3, 1, 6, 6) + 1
    v = augment(X, torch.Generator().manual_seed(0), shift=1, brightness=None, noise=0)
    for i in range(3):
        assert set(v[i].flatten().tolist()) <= set(X[i].flatten().tolist()) | {0.0}
    assert torch.equal(two_views(X, torch.Generator().manual_seed(3)), two_views(X, torch.Generator().manual_seed(3)))
    assert not torch.equal(two_views(X, torch.Generator().manual_seed(3)), two_views(X, torch.Generator().manual_seed(4)))


def test_training_learns_a_separable_task():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(120, 1, 8, 8, generator=g) * 0.3
    y = torch.arange(120) % 2
    X[y == 0, :, :, :4] += 0.7
    X[y == 1, :, :, 4:] += 0.7
    run = train_contrastive(lambda: ContrastiveCNN(2), X, y, loss="supcon", steps=30, batch_size=32, progress=False)
    assert (head_predict(run.model, X) == y.numpy()).mean() > 0.9
    # CE labels -1 are left out: an all-missing CE gives a zero CE term
    run2 = train_contrastive(lambda: ContrastiveCNN(2), X, y, loss="simclr", steps=3, batch_size=16, progress=False,
                             y_ce=np.full(120, -1))
    assert (run2.history.ce == 0).all()


def test_linear_probe_and_geometry():
    E = np.array([[1, 0], [1, 0.1], [0, 1], [0.1, 1.]])
    assert linear_probe(E, [0, 0, 1, 1], E, [0, 0, 1, 1])["acc"] == 1.0
    assert intra_class_cosine(np.array([[1., 0], [1, 0]]), [0, 0]) == pytest.approx(1.0)
    assert intra_class_cosine(np.array([[1., 0], [-1, 0]]), [0, 0]) == pytest.approx(-1.0)
    cs = centre_similarity(np.array([[1., 0], [0, 1]]), [0, 0])
    assert cs == pytest.approx([np.sqrt(.5)] * 2)
    g = stratum_geometry(np.array([[1., 0], [1, 0], [1, 0], [0, 1]]), [0, 0, 0, 0], [0, 0, 0, 1])
    assert g.set_index("stratum").centre_cos[1] < g.set_index("stratum").centre_cos[0]   # the rare stratum is farther


def test_simclr_per_image_matches_hand_formula():
    # 2 images in 2-D, tau 0.2: L(a) = -log(exp(s(a,p)/tau) / sum_{k != a} exp(s(a,k)/tau)), views of an image averaged
    z = torch.tensor([[1., 0], [0, 1], [0, -1], [-1, 0]])
    S = (z @ z.T / 0.2).numpy()
    L = [-np.log(np.exp(S[a, (a + 2) % 4]) / sum(np.exp(S[a, k]) for k in range(4) if k != a)) for a in range(4)]
    per = simclr_loss(z, tau=0.2, reduction="none")
    assert per.numpy() == pytest.approx([(L[0] + L[2]) / 2, (L[1] + L[3]) / 2], abs=1e-5)
    assert float(simclr_loss(z, tau=0.2)) == pytest.approx(float(per.mean()), abs=1e-6)
    with pytest.raises(ValueError, match="valid reductions: mean, none"):
        simclr_loss(z, reduction="sum")


def test_cross_view_differs_from_full_batch():
    # the cross-view denominator leaves out the anchor's own view: another loss than NT-Xent over all 2b views
    z = _batch(b=5)
    assert not torch.allclose(simclr_loss(z, cross_view=True), simclr_loss(z), atol=1e-4)
    assert torch.allclose(simclr_loss(z, cross_view=True, reduction="none").mean(), simclr_loss(z, cross_view=True), atol=1e-6)


def test_ecle_equals_per_batch_simclr_over_padded_batches():
    # N = 10, batch 4: three batches of 4, 3, 3 (the last two padded); same partitions as ecle draws them
    V = torch.randn(3, 10, 6, generator=torch.Generator().manual_seed(1))
    rng, tot = np.random.default_rng(5), np.zeros(10)
    for _ in range(2):
        for part in np.array_split(rng.permutation(10), 3):
            for r, r2 in [(0, 1), (0, 2), (1, 2)]:
                tot[part] += simclr_loss(torch.cat([V[r][part], V[r2][part]]), tau=0.3, reduction="none").numpy()
    assert ecle(V, tau=0.3, batch=4, partitions=2, seed=5) == pytest.approx(tot / 6, abs=1e-5)


def test_ecle_bad_arguments_named():
    V = torch.randn(2, 5, 3)
    with pytest.raises(ValueError, match="R must be >= 2"):
        ecle(V[:1])
    with pytest.raises(ValueError, match="batch must be >= 2"):
        ecle(V, batch=1)
    with pytest.raises(ValueError, match="one of a single sample"):
        ecle(V, batch=2)                     # 5 samples in 3 batches: 2, 2, 1


def test_augment_dropout_zero_keeps_views_and_drops_pixels():
    X = torch.rand(4, 2, 6, 6, generator=torch.Generator().manual_seed(0)) + 1
    assert torch.equal(two_views(X, torch.Generator().manual_seed(7), dropout=0.0), two_views(X, torch.Generator().manual_seed(7)))
    d = augment(X, torch.Generator().manual_seed(7), shift=0, brightness=None, noise=0, dropout=0.5)
    zero = (d == 0)
    assert torch.equal(zero[:, 0], zero[:, 1]) and zero.any() and not zero.all()
    assert torch.equal(d[~zero], X[~zero])
    with pytest.raises(ValueError, match=r"dropout is a probability in \[0, 1\)"):
        augment(X, torch.Generator(), dropout=-0.1)


# ---- RGB views on tensors -------------------------------------------------------------------------------------------
IDENTITY = dict(scale=(1, 1), flip=0, p_jitter=0, gray=0)


def _rgb(n=24, side=16, seed=0):
    return torch.rand(n, 3, side, side, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("preset", list(RGB_PRESETS))
def test_rgb_view_shape_range_and_seed(preset):
    X = _rgb()
    v = rgb_view(X, torch.Generator().manual_seed(5), preset)
    assert v.shape == X.shape and v.min() >= 0 and v.max() <= 1
    assert torch.equal(v, rgb_view(X, torch.Generator().manual_seed(5), preset))
    assert not torch.equal(v, rgb_view(X, torch.Generator().manual_seed(6), preset))
    assert rgb_view(X, torch.Generator(), preset, size=8).shape == (24, 3, 8, 8)
    two = rgb_two_views(X, torch.Generator().manual_seed(5), preset=preset)
    assert two.shape == (48, 3, 16, 16) and torch.equal(two[:24], v)


def test_rgb_view_identity_flip_and_grey():
    X, g = _rgb(), torch.Generator().manual_seed(0)
    assert torch.allclose(rgb_view(X, g, IDENTITY), X, atol=1e-5)
    assert torch.allclose(rgb_view(X, g, dict(IDENTITY, flip=1)), X.flip(-1), atol=1e-5)
    grey = rgb_view(X, g, dict(IDENTITY, gray=1))
    assert torch.equal(grey[:, 0], grey[:, 1]) and torch.equal(grey[:, 1], grey[:, 2])
    # a crop is a zoom: with scale (0.25, 0.25) no view equals its image
    assert not torch.allclose(rgb_view(X, g, dict(IDENTITY, scale=(0.25, 0.25))), X, atol=1e-2)


def test_rgb_view_scale_overrides_preset_and_blur_smooths():
    X = _rgb(200)
    # a constant image stays constant under crops; the crop scale override reaches the crop: smaller crops, less variance kept
    small = rgb_view(X, torch.Generator().manual_seed(1), IDENTITY, scale=(0.05, 0.05))
    assert small.std(dim=(2, 3)).mean() < 0.8 * X.std(dim=(2, 3)).mean()
    blurred = rgb_view(X, torch.Generator().manual_seed(1), dict(IDENTITY, blur=1, sigma=(1.5, 1.5)))
    assert blurred.std() < 0.6 * X.std() and blurred.min() >= 0 and blurred.max() <= 1


def test_rgb_view_bad_input_named():
    X = _rgb()
    with pytest.raises(ValueError, match="valid presets: paper, lightly_default"):
        rgb_view(X, torch.Generator(), "simclr")
    with pytest.raises(ValueError, match="valid keys"):
        rgb_view(X, torch.Generator(), dict(hue=0.1))
    with pytest.raises(ValueError, match=r"\(N, 3, H, W\)"):
        rgb_view(X[:, :2], torch.Generator())
    with pytest.raises(ValueError, match="gray is a probability"):
        rgb_view(X, torch.Generator(), dict(gray=1.5))


# ---- train_contrastive's options ------------------------------------------------------------------------------------
def _task():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(64, 1, 8, 8, generator=g) * 0.3
    y = torch.arange(64) % 2
    X[y == 0, :, :, :4] += 0.7
    X[y == 1, :, :, 4:] += 0.7
    return X, y


def _old_loop(X, y, loss, tau, steps, b, lr=1e-3, seed=0):
    "The training loop as it was before the loss callable, views, AdamW and the schedule: Adam, two_views, CE on the head."
    torch.manual_seed(seed)
    model = ContrastiveCNN(2)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed + 1)
    for _ in range(steps):
        model.train()
        idx = torch.randperm(len(X), generator=gen)[:b]
        z = model(two_views(X[idx], gen))
        l = contrastive_loss(loss, z, y[idx], tau) + 1.0 * torch.nn.functional.cross_entropy(model.head(z), y[idx].repeat(2))
        opt.zero_grad(); l.backward(); opt.step()
    return model.state_dict()


@pytest.mark.parametrize("loss", ["simclr", "supcon"])
def test_defaults_reproduce_the_old_loop_bit_for_bit(loss):
    X, y = _task()
    ref = _old_loop(X, y, loss, 0.5, steps=6, b=16)
    got = train_contrastive(lambda: ContrastiveCNN(2), X, y, loss=loss, steps=6, batch_size=16, progress=False).model.state_dict()
    assert all(torch.equal(ref[k], got[k]) for k in ref)


def test_loss_callable_gets_the_tuple_and_the_batch_labels():
    X, y = _task()

    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc, self.lv = ContrastiveCNN(2), torch.nn.Linear(64, 4)
        def forward(self, x):
            z = self.enc(x)
            return z, z[:, :4], self.lv(z)

    seen = []
    def loss(out, yb):
        seen.append((type(out), len(out), out[0].shape[0], yb.tolist()))
        return simclr_loss(out[0]) + out[2].pow(2).mean()
    run = train_contrastive(Head, X, y, loss=loss, ce_weight=0, steps=2, batch_size=8, progress=False)
    assert [s[:3] for s in seen] == [(tuple, 3, 16)] * 2 and all(len(s[3]) == 8 and set(s[3]) <= {0, 1} for s in seen)
    assert (run.history.contrastive > 0).all()
    with pytest.raises(ValueError, match="ce_weight"):
        train_contrastive(Head, X, y, loss=loss, steps=1, batch_size=8, progress=False)
    with pytest.raises(ValueError, match="alpha belongs to the spread loss"):
        train_contrastive(Head, X, y, loss=loss, alpha=0.5, ce_weight=0, steps=1, progress=False)


def test_views_callable_replaces_two_views():
    X, y = _task()
    calls = []
    def views(Xb, gen):
        calls.append(Xb.shape)
        return torch.cat([Xb, Xb.flip(-1)])
    train_contrastive(lambda: ContrastiveCNN(2), X, y, loss="simclr", views=views, steps=3, batch_size=8, progress=False)
    assert calls == [torch.Size([8, 1, 8, 8])] * 3
    with pytest.raises(ValueError, match="exclude each other"):
        train_contrastive(lambda: ContrastiveCNN(2), X, y, views=views, augment_params=dict(shift=0), steps=1, progress=False)


def test_adamw_weight_decay_shrinks_weights():
    X, y = _task()
    norm = lambda wd: sum(float(p.detach().norm() ** 2) for p in train_contrastive(
        lambda: ContrastiveCNN(2), X, y, loss="simclr", optimizer="adamw", weight_decay=wd, lr=1e-2, steps=8, batch_size=16,
        progress=False).model.parameters())
    assert norm(4.0) < 0.8 * norm(0.0)
    with pytest.raises(ValueError, match="valid optimizers: adam, adamw"):
        train_contrastive(lambda: ContrastiveCNN(2), X, y, optimizer="sgd", steps=1, progress=False)
    with pytest.raises(ValueError, match="weight_decay must be >= 0"):
        train_contrastive(lambda: ContrastiveCNN(2), X, y, weight_decay=-1, steps=1, progress=False)


def test_cosine_schedule_ends_near_zero():
    X, y = _task()
    run = train_contrastive(lambda: ContrastiveCNN(2), X, y, loss="simclr", schedule="cosine", lr=2e-3, steps=12, batch_size=8,
                            log_every=1, progress=False)
    lr = run.history.lr.to_numpy()
    assert lr[0] == pytest.approx(2e-3) and lr[-1] < 2e-3 * 0.02 and (np.diff(lr) < 0).all()
    const = train_contrastive(lambda: ContrastiveCNN(2), X, y, loss="simclr", steps=3, batch_size=8, log_every=1, progress=False)
    assert (const.history.lr == 1e-3).all()
    with pytest.raises(ValueError, match="valid schedules: None, cosine"):
        train_contrastive(lambda: ContrastiveCNN(2), X, y, schedule="linear", steps=1, progress=False)


# ---- simclr_loss(distance=) -----------------------------------------------------------------------------------------
def _similarity(fn):
    from pytorch_metric_learning.distances import BaseDistance

    class Sim(BaseDistance):
        def __init__(self):
            super().__init__(is_inverted=True)
        def compute_mat(self, q, r):
            return fn(torch.cdist(q, r))
    return Sim()


@pytest.mark.parametrize("cross_view", [False, True])
def test_cosine_distance_equals_default(cross_view):
    from pytorch_metric_learning.distances import CosineSimilarity
    z = _batch(b=7)
    assert torch.allclose(simclr_loss(z, 0.3, cross_view, distance=CosineSimilarity()), simclr_loss(z, 0.3, cross_view), atol=1e-6)


def test_negative_euclidean_similarity_by_hand():
    z = F.normalize(torch.tensor([[1., 0.3], [0.2, 1.], [0.7, 0.7], [-0.4, 1.]]), dim=1).numpy().astype(np.float64)
    D = np.sqrt(((z[:, None] - z[None]) ** 2).sum(-1))
    S = -D / 0.2
    L = [-S[a, (a + 2) % 4] + np.log(sum(np.exp(S[a, k]) for k in range(4) if k != a)) for a in range(4)]
    got = simclr_loss(torch.tensor(z), tau=0.2, distance=_similarity(lambda d: -d), reduction="none")
    assert got.numpy() == pytest.approx([(L[0] + L[2]) / 2, (L[1] + L[3]) / 2], abs=1e-5)
    assert float(simclr_loss(torch.tensor(z), tau=0.2, distance=_similarity(lambda d: -d))) == pytest.approx(np.mean(L), abs=1e-5)


def test_kernel_similarity_at_kappa_3e3_stays_finite():
    # kappa exp(-k d) / tau with kappa 201, k 1.28, tau 0.07 (logits to 2.9e3): float32 losses equal float64 logsumexp
    b = 32
    z = torch.randn(2 * b, 128, generator=torch.Generator().manual_seed(0))
    z[b:] = z[:b] + 0.3 * torch.randn(b, 128, generator=torch.Generator().manual_seed(1))
    z[b:b + 4] = -z[:4]                                                          # four images with views at opposite poles
    z = z.requires_grad_(True)
    sim = _similarity(lambda d: 201.0 * torch.exp(-1.28 * d))
    per = simclr_loss(z, tau=0.07, distance=sim, reduction="none")
    zn = F.normalize(z.detach().double(), dim=1)
    S = 201.0 * torch.exp(-1.28 * torch.cdist(zn, zn)) / 0.07
    S.fill_diagonal_(-float("inf"))
    h = torch.logsumexp(S, 1) - S[torch.arange(2 * b), (torch.arange(2 * b) + b) % (2 * b)]
    assert torch.isfinite(per).all() and per[:4].min() > 100          # beyond the 87 where NTXentLoss would stick
    assert torch.allclose(per.double(), (h[:b] + h[b:]) / 2, rtol=1e-4, atol=1e-2)
    mean = simclr_loss(z, tau=0.07, distance=sim)
    assert (per == 0).any()                                                      # exact zeros, which SupCon's default reducer skips
    assert float(mean.detach()) == pytest.approx(float(h.mean()), rel=1e-4)      # the mean runs over every anchor
    mean.backward()
    assert torch.isfinite(z.grad).all()
