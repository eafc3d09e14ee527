"""Tests of the tariff_ood paper: the PowerTAC-CSV loader and its bad-input errors, TOUSim's exact counterfactuals,
the permutation-equivariance property, the greedy allocation, and the sanity gates of spec 6.4."""
import re

import numpy as np
import pandas as pd
import pytest
import torch

from paperlib.data import DataError
from paperlib.papers.tariff_ood import (
    H, LEVELS, METHODS, HOUR_COLS, TOUSim, TOUSimConfig, t_in, t_out, policy_alloc, tousim_data, load_powertac,
    write_powertac_csv, window_sets, TOUForecaster, PermEquivariant, is_permutation_equivariant, pinball_loss,
    fit_forecaster, equivariance_error, window_aql, realized_gains, oracle_gains, znorm_stats, predict, evaluate_setting, evaluate_settings, level_entropy,
    tariff_branch_error, tariff_branch_diagram)


# --- the real-data path: PowerTAC logs exported as CSV ----------------------------------------------------------

def test_loader_reads_the_documented_layout(tmp_path):
    root = write_powertac_csv(tmp_path / "ptac", n_consumers=3, n_days=24, n_in=4, n_out=3)
    src, d = load_powertac(root)
    assert src.kind == "real" and src.fingerprint.startswith("real-") and src.params["tables"]["counterfactual"] > 0
    assert d.E.shape == (3, 24, 24) and d.profiles.shape == (7, 24)
    assert list(d.in_idx) == [0, 1, 2, 3] and list(d.out_idx) == [4, 5, 6]
    cons = pd.read_csv(root / "consumption.csv")
    first = cons[cons.consumer_id == "c1"].kwh.to_numpy()[:24]
    assert np.allclose(d.E[1, 0], first)                                 # rows land at their consumer and hour
    alloc = pd.read_csv(root / "tariff_allocations.csv")
    assert d.profile_ids[d.alloc[2, 5]] == alloc[(alloc.consumer_id == "c2")].profile_id.iloc[5]
    assert d.dow[0] == 0                                                 # 2021-01-04 is a Monday
    assert d.E_cf.shape == (3, 24 - 20, 7, 24) and np.isfinite(d.E_cf).all()
    sets = window_sets(d)
    assert {"train", "val", "iid", "ood", "profit"} <= set(sets)
    # same files, same fingerprint; a changed value, another one
    assert load_powertac(root)[0].fingerprint == src.fingerprint
    cons.loc[0, "kwh"] += 1; cons.to_csv(root / "consumption.csv", index=False)
    assert load_powertac(root)[0].fingerprint != src.fingerprint


def test_loader_without_counterfactuals_says_what_is_missing(tmp_path):
    root = write_powertac_csv(tmp_path / "p", counterfactual=False)
    _, d = load_powertac(root)
    assert d.E_cf is None
    sets = window_sets(d)
    assert "profit" not in sets and "ood" not in sets        # the tiny export allocates only T_in profiles


def test_profile_with_wrong_number_of_hours_names_the_profile(tmp_path):
    root = write_powertac_csv(tmp_path / "p")
    lines = (root / "profiles.csv").read_text().splitlines()
    lines[2] = ",".join(lines[2].split(",")[:-1])            # profile P1 loses its last hour
    (root / "profiles.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"profiles.csv, row 3 \(profile_id 'P1'\): 25 fields, but the header has 26"):
        load_powertac(root)
    # a header with 23 hour columns is named as such
    prof = pd.read_csv(write_powertac_csv(tmp_path / "q") / "profiles.csv").drop(columns="h23")
    prof.to_csv(tmp_path / "q" / "profiles.csv", index=False)
    with pytest.raises(DataError, match="24 hourly rates h00 ... h23, but the header has 23 hour column"):
        load_powertac(tmp_path / "q")


def test_gap_in_a_series_names_consumer_and_first_missing_timestamp(tmp_path):
    root = write_powertac_csv(tmp_path / "p", n_consumers=2)
    cons = pd.read_csv(root / "consumption.csv")
    drop = cons[(cons.consumer_id == "c1")].index[[50, 51, 90]]
    cons.drop(index=drop).to_csv(root / "consumption.csv", index=False)
    with pytest.raises(DataError, match=r"consumer 'c1' has gaps in its hourly series; first missing timestamp "
                                        r"2021-01-06 02:00:00 \(3 hour\(s\) missing"):
        load_powertac(root)


def test_other_bad_inputs_are_named(tmp_path):
    root = write_powertac_csv(tmp_path / "p")
    al = pd.read_csv(root / "tariff_allocations.csv")
    al.loc[4, "profile_id"] = "P99"; al.to_csv(root / "tariff_allocations.csv", index=False)
    with pytest.raises(DataError, match=r"tariff_allocations.csv, row 6 \(consumer_id 'c0'\): profile 'P99' is not in profiles.csv"):
        load_powertac(root)
    al.drop(index=4).to_csv(root / "tariff_allocations.csv", index=False)
    with pytest.raises(DataError, match="consumer 'c0' has no allocation for 2021-01-08"):
        load_powertac(root)
    (root / "consumption.csv").unlink()
    with pytest.raises(DataError, match="missing file .*consumption.csv"):
        load_powertac(root)
    prof = pd.read_csv(write_powertac_csv(tmp_path / "s") / "profiles.csv")
    prof.loc[1, "split"] = "maybe"; prof.to_csv(tmp_path / "s" / "profiles.csv", index=False)
    with pytest.raises(DataError, match=r"row 3 \(profile_id 'P1'\), column 'split': 'maybe' is not one of the valid values \(in, out\)"):
        load_powertac(tmp_path / "s")


# --- TOUSim: every draw keyed by (seed, consumer, day) ----------------------------------------------------------

CFG = TOUSimConfig(n_consumers=4, n_days=60, split=(40, 50))


def test_draws_do_not_depend_on_what_else_is_simulated():
    a = TOUSim(CFG, seed=3)
    b = TOUSim(TOUSimConfig(n_consumers=7, n_days=90, split=(40, 50)), seed=3)   # more consumers, more days
    assert np.array_equal(a.type1, b.type1[:4, :60]) and np.array_equal(a.pref, b.pref[:4, :60])
    assert a.consumers.equals(b.consumers.iloc[:4])
    assert np.allclose(a.persona, b.persona[:4])
    # one consumer-day simulated alone equals the same consumer-day inside a batch of other profiles and days
    rng = np.random.default_rng(0)
    P = rng.choice(LEVELS, size=(30, H))
    c, d = rng.integers(4, size=30), rng.integers(60, size=30)
    batch, flags = a.consumption(P, c, d)
    for i in (0, 7, 29):
        alone, f = a.consumption(P[i], [c[i]], [d[i]])
        assert np.array_equal(alone[0], batch[i]) and np.array_equal(f[0], flags[i])
    # the policy's allocation of (c, d) is one keyed draw
    T = t_in(a, 5)
    assert np.array_equal(policy_alloc(a, T), policy_alloc(b, T)[:4, :60])
    assert not np.array_equal(TOUSim(CFG, seed=4).type1, a.type1)


def test_counterfactuals_differ_only_where_type2_moved():
    sim = TOUSim(CFG, seed=1)
    rng = np.random.default_rng(1)
    n_moved = 0
    for _ in range(200):
        c, d = int(rng.integers(4)), int(rng.integers(60))
        p1, p2 = rng.choice(LEVELS, size=(2, H))
        (e1, f1), (e2, f2) = sim.consumption(p1, [c], [d]), sim.consumption(p2, [c], [d])
        touched = np.zeros(H, bool)
        pref = sim.pref[c, d]; touched[pref:pref + 2] = True
        touched |= (f1[0] > 0) | (f2[0] > 0)
        assert np.array_equal(e1[0][~touched], e2[0][~touched])
        assert np.isclose(e1.sum(), e2.sum())                      # load moves; energy is kept
        assert np.allclose(e1[0] - sim.type2(p1, [c], [d])[0][0], sim.type1[c, d])
        n_moved += bool(f1.any())
        if not sim.workday[c, d]: assert np.array_equal(e1, e2)    # no Type-II load on a non-work day
    assert n_moved > 20


def test_type2_moves_to_the_cheapest_block_by_rank():
    sim = TOUSim(CFG, seed=0)
    c = 0; d = int(np.flatnonzero(sim.workday[0])[0]); pref = sim.pref[c, d]
    p = np.full(H, 0.5); p[18:20] = 0.2
    _, f = sim.type2(p, [c], [d])
    assert f[0].nonzero()[0].tolist() == [18, 19]
    # the same ranks at other levels give the same response (rank response)
    _, f2 = sim.type2(np.where(p == 0.5, 0.8, 0.5), [c], [d])
    assert np.array_equal(f, f2)
    # when the preferred block is itself a minimum, nothing moves
    p[pref:pref + 2] = 0.2
    assert not sim.type2(p, [c], [d])[1].any()


def test_profiles_are_biased_in_and_uniform_out():
    sim = TOUSim(CFG, seed=0)
    Tin, Tout = t_in(sim, 10), t_out(sim)
    assert len(np.unique(Tin, axis=0)) == 10 and Tout.shape == (40, 24)
    assert np.array_equal(t_in(sim, 5), Tin[:5])                                 # nested in k
    assert level_entropy(Tout).mean() > 1.0 > level_entropy(Tin).mean()
    assert not {p.tobytes() for p in Tout} & {p.tobytes() for p in sim._tin}   # never producible by the heuristic


def test_t_in_larger_than_the_simulator_can_produce():
    sim = TOUSim(CFG, seed=0)
    t_in(sim, 1); n = len(sim._tin)
    assert t_in(sim, n).shape == (n, 24)
    with pytest.raises(ValueError, match=rf"\|T_in\| = {n + 1} is more than TOUSim can produce: .* {n} distinct profiles"):
        t_in(sim, n + 1)
    with pytest.raises(ValueError, match=re.escape("choose 1 <= |T_in|")):
        tousim_data(sim, 0)


# --- the method ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["Att.-HOD", "Att.+PE"])
def test_tariff_branch_is_permutation_equivariant(method):
    rng = np.random.default_rng(0)
    for s in range(3):
        torch.manual_seed(s)
        model = TOUForecaster(method, kv_use_hod=False)
        fut = torch.tensor(rng.choice(LEVELS, (8, H)), dtype=torch.float32)
        assert is_permutation_equivariant(model.exog, fut, n_perms=10, atol=1e-5, dim=-1, out_dim=-2, seed=s)
        # explicitly: permute the 24 tokens, the outputs follow
        perm = torch.randperm(H)
        assert torch.allclose(model.exog(fut[:, perm]), model.exog(fut)[:, perm], atol=1e-5)


def test_equivariance_survives_training_and_the_controls_are_not_equivariant():
    sim = TOUSim(CFG, seed=0)
    sets = window_sets(tousim_data(sim, 5, n_out_eval=2))
    model, _ = fit_forecaster("Att.+PE", sets["train"], sets["val"], epochs=2, batch=32)
    fut = sets["ood"]["fut"][:16]
    assert is_permutation_equivariant(model.exog, fut, dim=-1, out_dim=-2)
    torch.manual_seed(0)
    for m in ("Att.", "FC"):
        assert not is_permutation_equivariant(TOUForecaster(m).exog, fut, dim=-1, out_dim=-2)
    assert not is_permutation_equivariant(TOUForecaster("Att.+PE", kv_use_hod=True).exog, fut, dim=-1, out_dim=-2)
    x = torch.randn(3, H, 10)
    assert is_permutation_equivariant(PermEquivariant(pool="mean"), x)


def test_the_oracle_branch_is_equivariant_only_when_its_flags_move_with_the_tariffs():
    torch.manual_seed(0)
    ub = TOUForecaster("UB").eval()
    rng = np.random.default_rng(0)
    fut = torch.tensor(rng.choice(LEVELS, (8, H)), dtype=torch.float32)
    flag = torch.tensor(rng.random((8, H)) < 0.2, dtype=torch.float32)
    assert tariff_branch_error(ub, fut, flag) <= 1e-5                     # tokens = (tariff, flag) permuted together
    stuck = equivariance_error(lambda f: ub.exog(f, flag), fut, dim=-1, out_dim=-2)   # flags left in place
    assert stuck > 1e-3
    assert tariff_branch_error(TOUForecaster("FC").eval(), fut) > 1e-3


def test_the_architecture_diagrams_are_read_from_the_model():
    nodes, edges = tariff_branch_diagram(TOUForecaster("FC"))
    assert any("24\u2192240" in n for n in nodes)
    for m in METHODS:
        nodes, edges = tariff_branch_diagram(TOUForecaster(m))
        assert all(a in nodes and b in nodes for a, b in edges)
        assert any(n.startswith("exog") for n in nodes)
        assert any("hour of day" in n for n in nodes) == (m == "Att.")          # position enters only Att.


def test_pinball_loss_matches_its_definition():
    torch.manual_seed(0)
    y, pred, tau = torch.randn(5, 24), torch.randn(5, 3, 24), torch.rand(5, 3)
    e = (y[:, None] - pred).numpy(); q = tau[..., None].numpy()
    ref = np.where(e >= 0, q * e, (q - 1) * e)
    assert np.isclose(float(pinball_loss(y, pred, tau)), ref.mean(), atol=1e-6)
    assert np.allclose(pinball_loss(y, pred, tau, reduce=False).numpy(), ref.mean((1, 2)), atol=1e-6)


def test_oracle_allocation_is_an_upper_bound_of_realized_gain():
    sim = TOUSim(CFG, seed=0)
    data = tousim_data(sim, 5, n_out_eval=4)
    sets = window_sets(data)
    mu, sd = znorm_stats(data)
    orc = oracle_gains(data, sets["profit"])
    noisy = realized_gains(data, sets["profit"], sets["profit"]["y"].numpy() + np.random.default_rng(0).normal(0, 1, sets["profit"]["y"].shape), mu, sd)
    for opt in ("Option-1", "Option-2"):
        assert orc[opt].shape == (4, 10) and (orc[opt] >= noisy[opt] - 1e-9).all()
        assert (orc[opt] > noisy[opt] + 1e-9).any()


# --- the sanity gates of spec 6.4, on a small but trained setting ------------------------------------------------

@pytest.fixture(scope="module")
def gates():
    "Every method trained on one biased setting (|T_in| = 5, 8 consumers, Adam lr 2e-3, batch 128, 20 epochs)."
    sim = TOUSim(TOUSimConfig(n_consumers=8), seed=0)
    data = tousim_data(sim, 5, n_out_eval=6)
    res = evaluate_setting(data, list(METHODS), epochs=20, batch=128, lr=2e-3, log=lambda *a: None, workers=2)
    return res["aql"].groupby(["scenario", "method"]).aql.mean()


def test_fits_in_worker_processes_give_the_serial_numbers():
    "Each (setting, seed, method) fit seeds itself, so spreading fits over processes changes no number or order."
    sim = TOUSim(CFG, seed=0)
    settings = {k: tousim_data(sim, k, n_out_eval=2) for k in (3, 5)}
    kw = dict(methods=["NoX", "Att.+PE", "UB"], seeds=(0, 1), epochs=2, batch=64, lr=2e-3, log=lambda *a: None)
    serial, par = evaluate_settings(settings, workers=1, **kw), evaluate_settings(settings, workers=2, **kw)
    for k in settings:
        pd.testing.assert_frame_equal(serial[k]["aql"], par[k]["aql"])
        pd.testing.assert_frame_equal(serial[k]["gains"], par[k]["gains"])
        pd.testing.assert_frame_equal(serial[k]["curves"], par[k]["curves"])
        assert list(par[k]["curves"].method) == ["NoX", "Att.+PE", "UB"] * 2
        assert list(serial[k]["samples"]) == list(par[k]["samples"]) == ["Att.+PE"]
    assert not serial[3]["aql"].aql.equals(serial[5]["aql"].aql)      # the settings really differ


def test_gate_ub_beats_att_pe_ood(gates):
    assert gates[("OOD", "UB")] < gates[("OOD", "Att.+PE")]


def test_gate_nox_is_the_worst_iid_of_the_non_oracle_methods(gates):
    iid = gates["IID"].drop("UB")
    assert iid.idxmax() == "NoX", iid.to_dict()
