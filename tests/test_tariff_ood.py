"""Tests of the tariff_ood paper: the PowerTAC-CSV loader and every bad input it names (file, row, column), TOUSim's
exact counterfactuals, the permutation-equivariance property, the greedy allocation, the fits in worker processes, and
the rules of the gates and claims on constructed numbers (each with a case that must pass and one that must fail)."""
import re
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from paperlib.core import compute_threads, run_grid
from paperlib.data import DataError
from paperlib.papers.tariff_ood import (
    H, LEVELS, METHODS, HOUR_COLS, FOLDER, META_COLS, TOUSim, TOUSimConfig, t_in, t_out, policy_alloc, tousim_data,
    load_powertac, write_powertac_csv, window_sets, TOUForecaster, PermEquivariant, is_permutation_equivariant,
    pinball_loss, fit_forecaster, equivariance_error, window_aql, predict, realized_gains, oracle_gains, znorm_stats,
    evaluate_setting, evaluate_settings, level_entropy, tariff_branch_error, naive_window_aql,
    counterfactual_locality, margin_rule, bound_gates, sig_share, trend_rule, profit_rule, rank_vs_profit,
    all_significant, paired_table, method_arch, EQUIVARIANT, INPUTS, EVAL_TAUS)


# --- the real-data path: PowerTAC logs exported as CSV under <data_root>/powertac/ ----------------------------------

def write_tiny_dataset(data_root: Path) -> None:
    "The tiny PowerTAC export in the real layout: <data_root>/powertac/ with every table (and counterfactuals)."
    write_powertac_csv(Path(data_root) / FOLDER, n_consumers=2, n_days=21, n_in=3, n_out=2)


def _edit(data_root, name, fn):
    "Rewrite the lines of <data_root>/powertac/<name> with fn(lines) -> lines."
    p = Path(data_root) / FOLDER / name
    p.write_text("\n".join(fn(p.read_text().splitlines())) + "\n")


def _cell(name, row, column, value):
    "A mutation: set `column` of file line `row` (1 = header) of `name` to `value`."
    def mutate(data_root):
        def fn(lines):
            head = lines[0].split(",")
            fields = lines[row - 1].split(",")
            fields[head.index(column)] = value
            lines[row - 1] = ",".join(fields)
            return lines
        _edit(data_root, name, fn)
    return mutate


def _drop_column(name, column):
    def mutate(data_root):
        def fn(lines):
            i = lines[0].split(",").index(column)
            return [",".join(f for j, f in enumerate(l.split(",")) if j != i) for l in lines]
        _edit(data_root, name, fn)
    return mutate


def _lines(name, fn):
    return lambda data_root: _edit(data_root, name, fn)


def _write(name, text):
    return lambda data_root: (Path(data_root) / FOLDER / name).write_text(text)


def _latin1(data_root):
    p = Path(data_root) / FOLDER / "consumption.csv"
    b = p.read_bytes().replace(b"c0,", "c\xe9,".encode("latin-1"), 1)
    p.write_bytes(b)


def _no_rows_for_c1_hours(data_root):
    _edit(data_root, "consumption.csv", lambda l: [x for i, x in enumerate(l) if i not in (21 * 24 + 51, 21 * 24 + 52)])


# (name, mutate(data_root), expected substring of the DataError); every substring starts with the file it names
BREAKAGES = [
    ("non-numeric kwh", _cell("consumption.csv", 5, "kwh", "abc"),
     "consumption.csv, row 5 (consumer_id 'c0'), column 'kwh': 'abc' is not a valid float"),
    ("bad timestamp", _cell("consumption.csv", 3, "timestamp", "2021-13-45 25:00"),
     "consumption.csv, row 3 (consumer_id 'c0'), column 'timestamp': '2021-13-45 25:00' is not a valid timestamp"),
    ("timestamp inside an hour", _cell("consumption.csv", 4, "timestamp", "2021-01-04 02:30:00"),
     "consumption.csv, row 4 (consumer_id 'c0'), column 'timestamp': '2021-01-04 02:30:00' is not the start of an hour"),
    ("negative energy", _cell("consumption.csv", 6, "kwh", "-5"),
     "consumption.csv, row 6 (consumer_id 'c0'), column 'kwh': '-5.0' is not a finite energy >= 0"),
    ("infinite energy", _cell("consumption.csv", 7, "kwh", "inf"),
     "consumption.csv, row 7 (consumer_id 'c0'), column 'kwh': 'inf' is not a finite energy >= 0"),
    ("empty energy", _cell("consumption.csv", 8, "kwh", ""),
     "consumption.csv, row 8 (consumer_id 'c0'), column 'kwh': empty, but a value is required"),
    ("the same hour twice", _lines("consumption.csv", lambda l: l[:3] + [l[2]] + l[4:]),
     "consumption.csv, row 4 (consumer_id 'c0'), column 'consumer_id' + 'timestamp': 'c0', '2021-01-04 01:00:00' repeats row 3"),
    ("gap in a series", _no_rows_for_c1_hours,
     "consumption.csv: consumer 'c1' has gaps in its hourly series; first missing timestamp 2021-01-06 02:00:00"),
    ("missing column", _drop_column("consumption.csv", "kwh"), "consumption.csv: missing column(s) ['kwh']"),
    ("wrong field count", _lines("consumption.csv", lambda l: l[:9] + [l[9] + ",7"] + l[10:]),
     "consumption.csv, row 10 (consumer_id 'c0'): 4 fields, but the header has 3"),
    ("not UTF-8", _latin1, "consumption.csv, row 2: not UTF-8 text"),
    ("missing file", lambda r: (Path(r) / FOLDER / "profiles.csv").unlink(), "missing file"),
    ("empty file", _write("tariff_allocations.csv", ""), "tariff_allocations.csv is empty"),
    ("header only", _lines("profiles.csv", lambda l: l[:1]), "profiles.csv has a header but no rows"),
    ("23 hour columns", _drop_column("profiles.csv", "h23"),
     "profiles.csv, row 1 (header): a profile has 24 hourly rates h00 ... h23, but the header has 23 hour column(s)"),
    ("a profile loses an hour", _lines("profiles.csv", lambda l: l[:2] + [l[2].rsplit(",", 1)[0]] + l[3:]),
     "profiles.csv, row 3 (profile_id 'P1'): 25 fields, but the header has 26"),
    ("invalid split", _cell("profiles.csv", 3, "split", "maybe"),
     "profiles.csv, row 3 (profile_id 'P1'), column 'split': 'maybe' is not one of the valid values (in, out)"),
    ("non-numeric rate", _cell("profiles.csv", 2, "h05", "high"),
     "profiles.csv, row 2 (profile_id 'P0'), column 'h05': 'high' is not a valid float"),
    ("infinite rate", _cell("profiles.csv", 4, "h10", "inf"),
     "profiles.csv, row 4 (profile_id 'P2'), column 'h10': 'inf' is not a finite rate"),
    ("duplicate profile id", _cell("profiles.csv", 3, "profile_id", "P0"),
     "profiles.csv, row 3 (profile_id 'P0'), column 'profile_id': 'P0' repeats row 2"),
    ("no T_in profile", lambda r: [_cell("profiles.csv", i, "split", "out")(r) for i in (2, 3, 4)],
     "profiles.csv: no profile has split 'in'"),
    ("unknown profile", _cell("tariff_allocations.csv", 6, "profile_id", "P99"),
     "tariff_allocations.csv, row 6 (consumer_id 'c0'), column 'profile_id': 'P99' is not a profile_id of profiles.csv"),
    ("unknown consumer", _cell("tariff_allocations.csv", 2, "consumer_id", "zz"),
     "tariff_allocations.csv, row 2, column 'consumer_id': 'zz' has no rows in consumption.csv"),
    ("bad date", _cell("tariff_allocations.csv", 4, "date", "2021-02-30"),
     "tariff_allocations.csv, row 4 (consumer_id 'c0'), column 'date': '2021-02-30' is not a valid timestamp"),
    ("date with a time of day", _cell("tariff_allocations.csv", 5, "date", "2021-01-07 13:00"),
     "tariff_allocations.csv, row 5 (consumer_id 'c0'), column 'date': '2021-01-07 13:00:00' is not a date"),
    ("allocation missing for a day", _lines("tariff_allocations.csv", lambda l: l[:5] + l[6:]),
     "tariff_allocations.csv: consumer 'c0' has no allocation for 2021-01-08"),
    ("allocation twice for a day", _cell("tariff_allocations.csv", 3, "date", "2021-01-04"),
     "tariff_allocations.csv, row 3 (consumer_id 'c0'), column 'consumer_id' + 'date': 'c0', '2021-01-04' repeats row 2"),
    ("meta of an unknown consumer", _cell("consumer_meta.csv", 2, "consumer_id", "ghost"),
     "consumer_meta.csv, row 2, column 'consumer_id': 'ghost' has no rows in consumption.csv"),
    ("meta not a whole number", _cell("consumer_meta.csv", 2, "sub_consumers", "three"),
     "consumer_meta.csv, row 2 (consumer_id 'c0'), column 'sub_consumers': 'three' is not a valid int"),
    ("meta twice for a consumer", _cell("consumer_meta.csv", 3, "consumer_id", "c0"),
     "consumer_meta.csv, row 3 (consumer_id 'c0'), column 'consumer_id': 'c0' repeats row 2"),
    ("weather not a number", _cell("weather.csv", 2, "temperature", "warm"),
     "weather.csv, row 2, column 'temperature': 'warm' is not a valid float"),
    ("counterfactual of an unknown profile", _cell("counterfactual/cf.csv", 2, "profile_id", "PX"),
     "cf.csv, row 2 (consumer_id 'c0'), column 'profile_id': 'PX' is not a profile_id of profiles.csv"),
    ("counterfactual not a number", _cell("counterfactual/cf.csv", 3, "kwh", "n/a"),
     "cf.csv, row 3 (consumer_id 'c0'), column 'kwh': 'n/a' is not a valid float"),
    ("counterfactual bad timestamp", _cell("counterfactual/cf.csv", 4, "timestamp", "yesterday"),
     "cf.csv, row 4 (consumer_id 'c0'), column 'timestamp': 'yesterday' is not a valid timestamp"),
]


@pytest.mark.parametrize("name, mutate, expected", BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_each_breakage_is_named_by_file_row_and_column(tmp_path, name, mutate, expected):
    write_tiny_dataset(tmp_path)
    load_powertac(tmp_path / FOLDER)                                     # the tiny dataset itself is valid
    mutate(tmp_path)
    with pytest.raises(DataError) as e:
        load_powertac(tmp_path / FOLDER)
    msg = str(e.value)
    assert expected in msg, msg
    assert expected.split(",")[0].split(":")[0].split(" ")[0] in msg    # the file's name


def test_loader_reads_the_documented_layout(tmp_path):
    write_tiny_dataset(tmp_path)
    root = tmp_path / FOLDER
    src, d = load_powertac(root)
    assert src.kind == "real" and src.fingerprint.startswith("real-") and "counterfactual/cf.csv" in src.params["files"]
    assert d.E.shape == (2, 21, 24) and d.profiles.shape == (5, 24)
    assert list(d.in_idx) == [0, 1, 2] and list(d.out_idx) == [3, 4]
    cons = pd.read_csv(root / "consumption.csv")
    assert np.allclose(d.E[1, 0], cons[cons.consumer_id == "c1"].kwh.to_numpy()[:24])   # rows land at their consumer and hour
    alloc = pd.read_csv(root / "tariff_allocations.csv")
    assert d.profile_ids[d.alloc[1, 5]] == alloc[alloc.consumer_id == "c1"].profile_id.iloc[5]
    assert d.dow[0] == 0                                                 # 2021-01-04 is a Monday
    assert d.E_cf.shape == (2, 21 - 17, 5, 24) and np.isfinite(d.E_cf).all()
    assert {"train", "val", "iid", "ood", "profit"} <= set(window_sets(d))
    # consumer_meta.csv keeps every column, under the names of Table 1's rows
    meta = pd.read_csv(root / "consumer_meta.csv")
    assert list(d.meta.columns) == ["consumer_id", *[n for n, _ in META_COLS.values()]]
    assert d.meta.n_sub.tolist() == meta.sub_consumers.tolist() and d.meta.shift_kW.tolist() == meta.shiftable_kw.tolist()
    # same files, same fingerprint; a changed value (counterfactuals included), another one
    assert load_powertac(root)[0].fingerprint == src.fingerprint
    cf = pd.read_csv(root / "counterfactual" / "cf.csv"); cf.loc[0, "kwh"] += 1
    cf.to_csv(root / "counterfactual" / "cf.csv", index=False)
    assert load_powertac(root)[0].fingerprint != src.fingerprint


def test_a_bom_header_and_any_consumer_id_are_data(tmp_path):
    "Excel's UTF-8 byte-order mark is accepted on every table; a consumer id is kept as text, whatever it holds."
    write_tiny_dataset(tmp_path)
    root = tmp_path / FOLDER
    evil = "<img src=x onerror=alert(1)>"
    for name in ("consumption.csv", "tariff_allocations.csv", "consumer_meta.csv", "counterfactual/cf.csv"):
        p = root / name
        p.write_text(p.read_text().replace("c1,", f"\"{evil}\","), encoding="utf-8")
    for name in ("consumption.csv", "profiles.csv", "tariff_allocations.csv", "consumer_meta.csv", "weather.csv"):
        p = root / name
        p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
    _, d = load_powertac(root)
    assert d.consumers == ["c0", evil] and d.meta.consumer_id.tolist() == ["c0", evil]


def test_optional_tables_may_be_absent(tmp_path):
    root = write_powertac_csv(tmp_path / FOLDER, counterfactual=False, meta=False, weather=False)
    _, d = load_powertac(root)
    assert d.E_cf is None and d.meta is None
    sets = window_sets(d)
    assert "profit" not in sets and "ood" not in sets        # the tiny export allocates only T_in profiles
    # a consumer_meta.csv with unknown values is read (empty cells), not refused
    pd.DataFrame(dict(consumer_id=["c0"], sub_consumers=[""], working_days=[3], work_start=[9], break_start=[13],
                      work_duration=[8], shiftable_kw=[600.0])).to_csv(root / "consumer_meta.csv", index=False)
    _, d = load_powertac(root)
    assert d.meta.n_sub.isna().all() and d.meta.work_days.tolist()[0] == 3 and d.meta.consumer_id.tolist() == ["c0", "c1"]


def test_counterfactual_hour_in_two_files_names_both(tmp_path):
    write_tiny_dataset(tmp_path)
    cf = tmp_path / FOLDER / "counterfactual"
    lines = (cf / "cf.csv").read_text().splitlines()
    (cf / "more.csv").write_text("\n".join([lines[0], lines[1]]) + "\n")
    with pytest.raises(DataError, match=r"more.csv, row 2, columns 'profile_id' \+ 'consumer_id' \+ 'timestamp': .* repeats .*cf.csv row 2"):
        load_powertac(tmp_path / FOLDER)


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
    model, _ = fit_forecaster("Att.+PE", sets["train"], sets["val"], epochs=2, batch=32, schedule="one-cycle", n_tau=4)
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



# --- evaluation, the fits in worker processes, the simulator check -------------------------------------------------

def test_predict_shares_the_history_features_and_gives_the_forward_pass():
    sim = TOUSim(CFG, seed=0)
    sets = window_sets(tousim_data(sim, 5, n_out_eval=3))
    model, _ = fit_forecaster("Att.-HOD", sets["train"], sets["val"], epochs=1, batch=64)
    w = sets["profit"]
    plain = model(**{k: w[k] for k in INPUTS}, tau=torch.tensor(EVAL_TAUS).expand(len(w["y"]), -1)).detach()
    assert torch.allclose(predict(model, w, batch=97), plain, atol=1e-5)


def test_naive_forecast_is_last_week():
    data = tousim_data(TOUSim(CFG, seed=0), 5, n_out_eval=2)
    sets = window_sets(data); mu, sd = znorm_stats(data)
    w = sets["iid"]
    prev = (data.E[w["c"], w["d"] - 7] - mu[w["c"], None]) / sd[w["c"], None]
    assert np.allclose(naive_window_aql(data, w, mu, sd), 0.5 * np.abs(prev - w["y"].numpy()).mean(1), atol=1e-5)


def test_counterfactual_locality_passes_the_simulator_and_fails_a_changed_hour():
    data = tousim_data(TOUSim(CFG, seed=2), 5, n_out_eval=4)
    a, p = data.alloc[:, data.test_days], data.pref[:, data.test_days]
    n, bad = counterfactual_locality(data.E_cf, data.shift_cf, a, p)
    assert n == 4 * 10 * 9 and bad == 0
    E = data.E_cf.copy()
    c, t = 1, 3
    free = np.flatnonzero(~((np.arange(H) >= p[c, t]) & (np.arange(H) < p[c, t] + 2)) & (data.shift_cf[c, t].max(0) == 0))
    q = (a[c, t] + 1) % E.shape[2]                                      # a profile other than the allocated one
    E[c, t, q, free[0]] += 1.0; E[c, t, q, free[1]] -= 1.0              # energy kept, an untouched hour changed
    assert counterfactual_locality(E, data.shift_cf, a, p)[1] == 1


def test_fits_in_worker_processes_give_the_serial_numbers(tmp_path):
    """Each fit seeds itself from its (replicate, method), so spreading fits over processes, or over the cells of a grid
    (which seeds the global generators per cell), changes no number or order."""
    sims = {s: TOUSim(CFG, seed=s) for s in (0, 1)}
    settings = {(s, k, "main"): tousim_data(sims[s], k, n_out_eval=2) for s in (0, 1) for k in (3, 5)}
    plan = [(key, m) for key in settings for m in ("NoX", "Att.+PE", "UB")] + [((0, 3, "main"), "Att.+PE (kv_use_hod)")]
    kw = dict(recipe=dict(epochs=2, batch=64, lr=2e-3, n_tau=4, schedule="one-cycle"), log=lambda *a: None,
              samples=[((0, 3, "main"), "Att.+PE")])
    with compute_threads(1):                         # as in a notebook: one thread in the parent, one in each worker
        serial = evaluate_settings(settings, plan, workers=1, **kw)
    par = evaluate_settings(settings, plan, workers=2, **kw)
    gridded = evaluate_settings(settings, plan, grid=partial(run_grid, store=tmp_path, seed=3, workers=2), **kw)
    for k in ("aql", "gains", "fits"):
        pd.testing.assert_frame_equal(serial[k], par[k])
        pd.testing.assert_frame_equal(serial[k], gridded[k])
    assert len(list((tmp_path / "fits").glob("*.pkl"))) == len(plan)         # one kept result per fit
    assert list(par["fits"].method) == [m for _, m in plan]
    assert list(serial["samples"]) == list(par["samples"]) == [((0, 3, "main"), "Att.+PE")]
    a = serial["aql"]
    assert not a[a.k == 3].aql.reset_index(drop=True).equals(a[a.k == 5].aql.reset_index(drop=True))   # settings differ
    f = serial["fits"].set_index("method").equivariance_error
    assert f["Att.+PE (kv_use_hod)"] > 1e-5 and (f[["NoX", "Att.+PE", "UB"]] <= 1e-5).all()
    assert method_arch("Att.+PE (kv_use_hod)") == ("Att.+PE", dict(kv_use_hod=True))
    with pytest.raises(ValueError, match="unknown method 'LSTM'"):
        method_arch("LSTM")


def test_a_schedule_must_be_known():
    sets = window_sets(tousim_data(TOUSim(CFG, seed=0), 3, n_out_eval=1))
    with pytest.raises(ValueError, match="unknown schedule 'cosine'; valid: constant, one-cycle"):
        fit_forecaster("FC", sets["train"], sets["val"], epochs=1, schedule="cosine")


# --- the rules of the gates and claims, on constructed numbers: each must pass one case and fail another -------------

def test_margin_rule():
    assert margin_rule({"A": 0.089, "B": 0.05}, 0.1, 0.1) == []
    assert margin_rule({"A": 0.091, "B": 0.05}, 0.1, 0.1) == ["A"]            # 9% below is not 10% below
    assert margin_rule({"A": 0.11}, 0.1, 0.0) == ["A"]                         # worse than the reference
    assert margin_rule({"A": float("nan")}, 0.1, 0.1) == ["A"]


def test_bound_gates_nox_worst_and_ub_best():
    iid = {5: {"NoX": 0.12, "Ind.": 0.11, "FC": 0.10, "Att.+PE": 0.105, "UB": 0.2},
           15: {"NoX": 0.12, "Ind.": 0.11, "FC": 0.10, "Att.+PE": 0.105, "UB": 0.2}}
    ood = {5: {"UB": 0.09, "Att.+PE": 0.10}, 15: {"UB": 0.09, "Att.+PE": 0.10}}
    g = bound_gates(iid, ood)
    assert g == dict(nox_worst_iid={5: True, 15: True}, ub_below_attpe_ood={5: True, 15: True})
    iid[15]["Att.-HOD"] = 0.125                                                 # a tariff model worse than NoX
    ood[5]["UB"] = 0.11                                                         # the oracle worse than Att.+PE
    g = bound_gates(iid, ood)
    assert g["nox_worst_iid"] == {5: True, 15: False} and g["ub_below_attpe_ood"] == {5: False, 15: True}
    assert bound_gates(iid)["ub_below_attpe_ood"] is None                      # no OOD: S2 is not checkable


def test_sig_share():
    ok, per, share = sig_share({5: [0.001, 0.01], 15: [0.02, 0.049], 35: [0.3, 0.01]})
    assert ok and per == {5: True, 15: True, 35: False} and share == pytest.approx(2 / 3)
    assert sig_share({5: [0.001, 0.01], 15: [0.02, 0.05], 35: [0.3, 0.01]})[0] is False   # p = 0.05 is not < 0.05
    assert sig_share({5: [0.001, float("nan")]})[0] is False
    assert sig_share({})[0] is None


def test_trend_rule():
    up = {m: {5: 0.10, 15: 0.11, 35: 0.12} for m in "ABCDEFGH"}
    assert trend_rule(up, +1)[0] is True and trend_rule(up, -1)[0] is False
    five = {**up, **{m: {5: 0.12, 15: 0.11, 35: 0.10} for m in "ABC"}}         # 5 of 8 rise: enough
    four = {**up, **{m: {5: 0.12, 15: 0.11, 35: 0.10} for m in "ABCD"}}        # 4 of 8 rise: not enough
    assert trend_rule(five, +1)[0] is True and trend_rule(four, +1)[0] is False
    assert trend_rule({m: {5: 0.1, 35: 0.2} for m in "AB"}, +1)[0] is None      # two settings: no trend
    ks = range(1, 11)                                                            # with 10 settings, p < 0.05 as well
    assert trend_rule({m: {k: 0.1 + 0.01 * k for k in ks} for m in "AB"}, +1)[0] is True
    noisy = [0.5, 0.1, 0.4, 0.2, 0.9, 0.3, 0.6, 0.7, 0.35, 0.8]                  # rho > 0 but p > 0.05
    from scipy.stats import spearmanr
    r = spearmanr(list(ks), noisy)
    assert r[0] > 0 and r[1] > 0.05
    assert trend_rule({m: dict(zip(ks, noisy)) for m in "AB"}, +1)[0] is False


def test_profit_rule():
    p = {("Att.-HOD", "Option-1"): 0.01, ("Att.+PE", "Option-1"): 0.04, ("Att.-HOD", "Option-2"): 0.5, ("Att.+PE", "Option-2"): 0.5}
    assert profit_rule(p) is True
    p[("Att.+PE", "Option-1")] = 0.06
    assert profit_rule(p) is False                                               # no option where both hold
    assert profit_rule({("Att.-HOD", "Option-1"): 0.01}) is False                # a missing test fails


def test_rank_vs_profit_tests_its_premise():
    most = {("Option-1", 5): "Att.+PE", ("Option-2", 5): "Att.-HOD", ("Option-1", 15): "Att.+PE", ("Option-2", 15): "Att.+PE"}
    assert rank_vs_profit({5: "Att.+PE", 15: "FC"}, most) == (True, None)
    ok, why = rank_vs_profit({5: "FC", 15: "FC"}, most)                         # FC forecasts best everywhere
    assert not ok and why.startswith("premise fails") and "5: FC" in why
    ok, why = rank_vs_profit({5: "FC", 15: "Att.+PE"}, most)                    # best where it is also most profitable
    assert not ok and "most profitable wherever it forecasts best" in why


def test_all_significant():
    assert all_significant({"Att.-HOD": 0.001, "Att.+PE": 0.049}) is True
    assert all_significant({"Att.-HOD": 0.001, "Att.+PE": 0.05}) is False
    assert all_significant({}) is False


def test_paired_table_holm_over_settings():
    df = pd.DataFrame(dict(k=np.repeat([5, 10], 40), window=np.tile(np.arange(20), 4),
                           method=np.tile(np.repeat(["A", "B"], 20), 2), v=np.r_[np.arange(20), np.arange(20) + 1.0, np.zeros(40)]))
    pt = paired_table(df, "v", [("A", "B")])
    assert pt.n.tolist() == [20, 20] and pt.p.iloc[0] < 1e-4 and pt.p.iloc[1] == 1.0
    assert pt.p_holm.iloc[0] == pytest.approx(min(1, 2 * pt.p.iloc[0]))
    assert paired_table(df, "v", [("A", "B")], alternative="greater").p.iloc[0] > 0.99   # the other direction
