"The real-data path of salient_facts: a tiny dataset written in the real layout, the ways real files break, and the claim rules."
from pathlib import Path

import numpy as np
import pytest

from paperlib.data import DataError
from paperlib.papers import salient_facts as sf
from paperlib.papers.salient_facts import load_real_data, FOLDER, TASK_FOLDER

def write_tiny_dataset(data_root: Path) -> None:
    "Two companies, unlabeled.txt, an expert file, a product and the four minority tasks, in the real layout."
    sf.write_tiny_dataset(data_root)

def _edit(data_root, rel, fn):
    p = Path(data_root) / FOLDER / rel
    p.write_text(fn(p.read_text()))

def _bad_label(text):
    lines = text.splitlines(); head, first = lines[0], lines[1].rsplit(",", 2)
    lines[1] = ",".join([first[0], "2", first[2]])
    return "\n".join(lines) + "\n"

# (name, how the tiny dataset is broken, what the error must say): the runner's bad-data checks read this list
BREAKAGES = [
    ("label not 0/1", lambda r: _edit(r, "amazon.csv", _bad_label), "amazon.csv, row 2, column 'label': '2' is not one of the valid values (0, 1)"),
    ("empty unlabeled.txt", lambda r: _edit(r, "unlabeled.txt", lambda t: "\n\n"), "unlabeled.txt is empty"),
    ("missing column", lambda r: _edit(r, "google.csv", lambda t: "sentence\nfree lunch\n"), "missing column(s) ['label']"),
    ("unknown reason", lambda r: _edit(r, "google.csv", lambda t: "sentence,label,reason\nok ok,0,boring\nfree spa,1,\n"),
     "column 'reason': 'boring' is not one of the valid values"),
    ("no positive", lambda r: _edit(r, "google.csv", lambda t: "sentence,label\nok ok,0\n"), "no sentence labelled 1"),
    ("bad task label", lambda r: (Path(r) / TASK_FOLDER / "HOTEL" / "train.csv").write_text("text,label\nplease add a spa,yes\n"),
     "train.csv, row 2, column 'label': 'yes' is not a valid int"),
    ("empty file", lambda r: _edit(r, "google.csv", lambda t: ""), "is empty"),
]

def test_tiny_dataset_loads(tmp_path):
    write_tiny_dataset(tmp_path)
    src, d = load_real_data(tmp_path / FOLDER, tmp_path / TASK_FOLDER)
    lab = d["labelled"]
    assert src.kind == "real" and set(lab.company) == {"google", "amazon"} and len(lab) == 80
    assert set(lab.split) == {"train", "test"} and lab.groupby("company").label.sum().tolist() == [6, 6]
    assert len(d["pool"]) == 40 and d["experts"].expert.sum() == 4 and set(d["tasks"]) == set(sf.TASKS)
    assert "label" in d["products"] and d["products"]["product"].unique().tolist() == ["headset"]

def test_bom_header_is_read(tmp_path):
    write_tiny_dataset(tmp_path)
    p = tmp_path / FOLDER / "google.csv"
    p.write_text(p.read_text(), encoding="utf-8-sig")
    assert (load_real_data(tmp_path / FOLDER)[1]["labelled"].company == "google").sum() == 40

def test_optional_parts_may_be_absent(tmp_path):
    write_tiny_dataset(tmp_path)
    for p in (tmp_path / FOLDER).glob("expert_*.txt"): p.unlink()
    for p in (tmp_path / FOLDER / "product").glob("*.csv"): p.unlink()
    _, d = load_real_data(tmp_path / FOLDER)
    assert d["experts"] is None and d["products"] is None and d["tasks"] == {}

@pytest.mark.parametrize("name,mutate,expected", BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_broken_data_is_named(tmp_path, name, mutate, expected):
    write_tiny_dataset(tmp_path)
    mutate(tmp_path)
    with pytest.raises(DataError) as e: load_real_data(tmp_path / FOLDER, tmp_path / TASK_FOLDER)
    assert expected in str(e.value), str(e.value)

def test_long_sentence_is_not_an_error(tmp_path):
    "A sentence longer than the encoder's limit loads; the encoder truncates it and the cache counts it (tests/test_text.py)."
    write_tiny_dataset(tmp_path)
    _edit(tmp_path, "google.csv", lambda t: t + " ".join(["laundry"] * 600) + ",1,\n")
    lab = load_real_data(tmp_path / FOLDER)[1]["labelled"]
    assert lab.sentence.str.len().max() > 4000

def test_claim_rules_pass_and_fail():
    lm, cl = {"A": [0.5, 0.55, 0.6], "B": [0.4, 0.42, 0.45]}, {"A": [0.2, 0.22, 0.25], "B": [0.1, 0.15, 0.12]}
    assert sf.lm_beats_classical(lm, cl)[0] is True and sf.lm_beats_classical(cl, lm)[0] is False
    assert sf.enrichment_helps({"a": [0.05, 0.06, 0.07], "b": [0.04, 0.05, 0.07]}, 2)[0] is True
    assert sf.enrichment_helps({"a": [0.05, 0.06, 0.07], "b": [-0.04, -0.05, -0.07]}, 1)[0] is False
    assert sf.lp_helps({"a": [0.05, 0.06, 0.07], "b": [0.01, 0.02, 0.0]})[0] is True
    assert sf.lp_helps({"a": [0.05, 0.06, 0.07], "b": [-0.01, 0.0, 0.0]})[0] is False
    assert sf.transfer_richer(40, 6)[0] and not sf.transfer_richer(10, 6)[0]
    assert sf.experts_ranked_high(13, 14, 14)[0] and not sf.experts_ranked_high(8, 14, 14)[0]
    assert sf.pseudo_label_sanity(50, 150, 0.02)[0] and not sf.pseudo_label_sanity(4, 150, 0.02)[0]
    # headroom: the paper-sized plain F1s pass, a saturated proxy does not
    assert sf.has_headroom({"Google": [0.33, 0.30], "Amazon": [0.27]}, sf.F1_CEILING)
    assert not sf.has_headroom({"Google": [0.99, 0.98], "Amazon": [0.5]}, sf.F1_CEILING) and not sf.has_headroom({}, 0.8)
    # C8/C9 on stats.not_worse with the margin 0.02: close arms pass, noise or a shortfall does not, one seed decides nothing
    close = {t: [0.004, -0.002, 0.001] for t in "abcd"}
    assert sf.small_data_matches(close, close)[0] is True
    assert sf.small_data_matches({t: [-0.05, -0.04, -0.06] for t in "abcd"}, close)[0] is False
    assert sf.small_data_matches(close, {t: [0.03, -0.04, 0.02] for t in "abcd"})[0] is False
    assert sf.small_data_matches({"a": [0.0]}, {"a": [0.0]})[0] is None
    assert sf.mechanism_holds([0.3, 0.2, 0.25], [0.0, 0.01, 0.02])["passed"] is True
    assert sf.mechanism_holds([0.1, 0.0, 0.05], [0.1, 0.0, 0.05])["passed"] is False

def test_tag_words_are_single_pieces_and_salient_is_not():
    from paperlib.text import load_wordpiece, is_single_piece
    tok = load_wordpiece()
    assert all(is_single_piece(tok, w) for w in sf.TAGS.values()) and not is_single_piece(tok, "salient")

def test_generator_tag_rates_near_targets():
    big = sf.SalientSim(sf.SimConfig(sizes=(("A", 20000, 10000),), n_pool=1, n_product=1), seed=1).company("A", 20000, 10000, 0)
    rates = sf.tag_rates(big)
    for k, v in sf.TAG_TARGETS.items(): assert abs(rates[k] - v) <= 0.02, (k, rates[k])
    tr = big[(big.split == "train") & (big.label == 1)]
    assert not tr.unseen.any() and big[(big.split == "test") & (big.label == 1)].unseen.any()

def test_band_gate_passes_and_fails():
    assert sf.in_band({"A": [0.3, 0.4, 0.5], "B": [0.25, 0.3, 0.2]}, sf.F1_BAND)
    assert not sf.in_band({"A": [0.3, 0.4, 0.5], "B": [0.9, 0.95, 0.99]}, sf.F1_BAND)      # the old proxy: saturated
    assert not sf.in_band({"A": [0.1, 0.1, 0.15]}, sf.F1_BAND) and not sf.in_band({}, sf.F1_BAND)
    assert abs(sf.band_margin({"A": [0.3], "B": [0.55]}, (0.2, 0.6)) - 0.05) < 1e-12
    assert sf.band_margin({"A": [0.7]}, (0.2, 0.6)) < 0

def test_difficulty_knobs_are_checked():
    for bad, msg in ((dict(neg_uncommon=1.2), "neg_uncommon=1.2"), (dict(hard_share=-0.5), "hard_share=-0.5"),
                     (dict(pos_wordy="x"), "pos_wordy='x'"), (dict(neg_number=0.7, neg_frame=0.4), "at most 1")):
        with pytest.raises(ValueError, match=msg): sf.SimConfig(**bad)
    with pytest.raises(ValueError, match="level=2.5"): sf.sim_config(2.5)
    with pytest.raises(ValueError, match="level=-1"): sf.task_hardness(-1)
    assert sf.sim_config(0.0) == sf.SimConfig(**sf.EASY) and sf.sim_config(1.0).hard_share == 1.0

def test_harder_levels_make_noisier_tags():
    "Up the ladder the tags fire more on negatives and less on positives (rarer and noisier tags)."
    r = [sf.tag_rates(sf.SalientSim(sf.sim_config(lv, sizes=(("A", 8000, 2000),)), seed=1).company("A", 8000, 2000, 0)) for lv in (0.0, 1.0)]
    assert r[1]["uncommon_neg"] > r[0]["uncommon_neg"] + 0.08 and r[1]["quantity_neg"] > r[0]["quantity_neg"] + 0.1
    assert r[1]["quantity_pos"] < r[0]["quantity_pos"] - 0.05

def test_borderline_negatives():
    "Level 2's borderline negatives are salient-looking sentences labelled 0; below level 1 there are none."
    assert sf.sim_config(1.0).neg_borderline == 0 and sf.sim_config(2.0).neg_borderline == 0.02
    assert sf.sim_config(1.5) == sf.SimConfig(**dict(sf.HARD, neg_borderline=0.01))
    d = sf.SalientSim(sf.SimConfig(**dict(sf.EASY, neg_borderline=0.5), sizes=(("A", 2000, 100),)), seed=2).company("A", 2000, 100, 0)
    neg = d[d.label == 0]
    assert 0.4 < (neg.uncommon | neg.quantity).mean() < 0.7 and set(neg.reason) <= set(sf.REASONS)

def test_defaults_are_the_calibrated_proxy():
    "SimConfig()'s defaults are the calibrated level, and its tag rates are the documented TAG_TARGETS (within 0.02)."
    assert sf.SimConfig() == sf.sim_config(sf.SIM_LEVEL)
    big = sf.SalientSim(sf.SimConfig(sizes=(("A", 20000, 10000),), n_pool=1, n_product=1), seed=7).company("A", 20000, 10000, 0)
    r = sf.tag_rates(big)
    for k, v in sf.TAG_TARGETS.items(): assert abs(r[k] - v) <= 0.02, (k, r[k], v)
