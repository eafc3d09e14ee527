"""Tests of the CLESS paper: the docstring snapshot (its hash check and its long tail), zero-shot tagging that needs the
tags' words in the texts (zipftags' rho as a negative control), the paired AP bootstrap against scikit-learn, the split,
the rules on real model scores, and the real-data path on a tiny Cross Validated written in Kaggle's layout
(`write_tiny_dataset`)."""
import gzip, json
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score

from paperlib.data import DataError
from paperlib.datasets import read_cross_validated, write_tiny_cross_validated
from paperlib.fairness import equal_mass_bins
from paperlib.papers.cless_longtail import (
    CLESS, DOCCORPUS_SHA256, ap_holds, ap_micro, ap_micro_boot, build_vocab, cross_validated_corpus, encode_labels,
    encode_texts, label_permutation_p, load_doccorpus, pretrain, split_corpus, tag_words, words, zeror_ap, zipftags)


def write_tiny_dataset(data_root: Path) -> None:
    "A tiny Cross Validated in Kaggle's layout: 40 questions with HTML and LaTeX, one latin-1 title, 1-3 tags each."
    write_tiny_cross_validated(Path(data_root) / "cross_validated")


def test_snapshot_is_the_committed_one_and_long_tailed():
    c = load_doccorpus()
    assert c.meta["sha256"] == DOCCORPUS_SHA256 and len(c) > 2500
    Y = c.label_matrix()
    bins = np.bincount(equal_mass_bins(np.asarray(Y.sum(0)).ravel(), 5), minlength=5)
    assert bins[0] <= 10 and bins[4] >= 0.5 * bins.sum()          # a handful of head tags, most tags in the tail
    assert 0.0005 < Y.mean() < 0.01                                 # a label density near the paper's 0.002


def test_a_changed_snapshot_is_refused(tmp_path):
    from importlib.resources import files
    src = files("paperlib.papers") / "data" / "doccorpus_v1.jsonl.gz"
    lines = gzip.decompress(src.read_bytes()).decode().splitlines()
    rec = json.loads(lines[1]); rec["text"] += " edited"; lines[1] = json.dumps(rec, sort_keys=True, ensure_ascii=False)
    bad = tmp_path / "doccorpus_v1.jsonl.gz"
    bad.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    with pytest.raises(DataError, match="(?i)sha-?256"): load_doccorpus(bad)


def _zero_shot_times_zeror(rho: float, seed: int = 0) -> float:
    "Zero-shot test AP / ZeroR of a small CLESS pretrained on a zipftags corpus whose tag words occur with probability rho."
    c = zipftags(500, n_tags=40, rho=rho, seed=seed)
    names = c.tag_names()
    Y = np.asarray(c.label_matrix(names).todense(), bool)
    s = split_corpus(Y, seed=seed)
    W = [words(t) for t in c.texts]
    vocab = build_vocab([W[i] for i in s["train"]], size=3000, extra=sorted({w for n in names for w in tag_words(n)}))
    tok = {k: encode_texts([W[i] for i in v], vocab, 64) for k, v in s.items()}
    labels = encode_labels([tag_words(n) for n in names], vocab)
    torch.manual_seed(seed)
    m = CLESS(torch.randn(len(vocab), 32) * 0.3, filters={1: 32, 2: 32}, k=3, h=32, hidden=(64, 64))
    pretrain(m, tok["train"], c=20, epochs=4, batch=32, lr=3e-3, seed=seed)
    return ap_micro(Y[s["test"]], m.score_all(tok["test"], labels).numpy()) / zeror_ap(Y[s["test"]])


def test_zero_shot_needs_the_tag_words_in_the_texts():
    "Self-supervision can only learn a tag it can read: with rho = 1 zero-shot AP is far above ZeroR, with rho = 0 it is not."
    assert _zero_shot_times_zeror(1.0) > 3
    assert _zero_shot_times_zeror(0.0) < 0.5 * _zero_shot_times_zeror(1.0)


def test_bootstrap_ap_is_sklearns_weighted_ap():
    rng = np.random.default_rng(4)
    Y = rng.random((60, 12)) < 0.08
    S = np.round(rng.normal(size=(60, 12)) + Y, 1)                  # ties
    boot = ap_micro_boot(Y, [S], list(range(3, 12)), B=5, seed=9)[:, 0]
    W = np.random.default_rng(9).multinomial(60, np.full(60, 1 / 60), size=5)
    for b in range(5):
        w = np.repeat(W[b], 9)
        assert boot[b] == pytest.approx(average_precision_score(Y[:, 3:].ravel(), S[:, 3:].ravel(), sample_weight=w), abs=1e-10)


def test_rules_on_scores_that_differ_and_that_do_not():
    rng = np.random.default_rng(0)
    Y = rng.random((200, 30)) < 0.05
    base = rng.normal(size=Y.shape) + Y
    better = base + 1.5 * Y
    cols = list(range(30))
    assert ap_holds(Y, dict(a=better, b=base), {"a − b": ("a", "b", cols, 0.0)}, B=200).passed
    assert not ap_holds(Y, dict(a=base, b=base), {"a − b": ("a", "b", cols, 0.0)}, B=200).passed     # a tie fails
    assert label_permutation_p(Y, better, n=99)[2] == 0.01
    assert label_permutation_p(Y, np.repeat(Y.sum(1, keepdims=True), 30, 1) + 0.0, n=99)[2] == 1.0    # row scores only


def test_split_is_complete_disjoint_and_seeded():
    Y = np.random.default_rng(1).random((300, 8)) < 0.2
    s = split_corpus(Y, seed=5)
    assert sorted(np.concatenate(list(s.values()))) == list(range(300))
    assert [len(v) for v in s.values()] == [240, 30, 30]
    assert (split_corpus(Y, seed=5)["dev"] == s["dev"]).all() and not (split_corpus(Y, seed=6)["dev"] == s["dev"]).all()
    with pytest.raises(ValueError, match="three positive numbers"): split_corpus(Y, shares=(0.5, 0.5, 0.0))


def test_real_path_reads_tiny_cross_validated(tmp_path):
    write_tiny_dataset(tmp_path)
    df = read_cross_validated(tmp_path / "cross_validated")
    c = cross_validated_corpus(df, cap=None, seed=0)
    assert len(c) == len(df) >= 30
    assert any("</title>" in t for t in c.texts) and not any("<p>" in t for t in c.texts)
    assert tag_words("p-value") == ("p", "value")
    few = cross_validated_corpus(df, cap=10, seed=0)
    assert len(few) == 10 and any("subsample" in n for n in few.meta["notes"])
