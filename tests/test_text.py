"Library tests of paperlib.text on the real offline MiniLM: the cache encodes each text once, counts truncation, Jaccard and IDF agree with plain Python."
import numpy as np, pytest
from paperlib.text import (EmbeddingCache, load_minilm, load_wordpiece, wordpiece_sets, jaccard_matrix, wordpieces, idf,
                           f1_threshold_search, f1_pos)

@pytest.fixture(scope="module")
def minilm(): return load_minilm("cpu")

def test_cache_matches_direct_encoding_and_counts_truncation(minilm, tmp_path):
    c = EmbeddingCache(minilm, "minilm", tmp_path / "e.npz")
    long = " ".join(["laundry"] * (minilm.max_seq_length + 10))
    E = c.encode(["free lunch", "dog park", "free lunch", long])
    ref = minilm.encode(["free lunch", "dog park"], convert_to_numpy=True)
    np.testing.assert_allclose(E[:2], ref, atol=1e-5)
    np.testing.assert_array_equal(E[0], E[2])
    assert c.stats() == dict(encoded=3, cache_hits=1, truncated=1, cached=3)
    c.save()
    assert EmbeddingCache(None, "minilm", c.path).encode(["dog park"]).shape == (1, ref.shape[1])

def test_jaccard_against_python_sets():
    tok = load_wordpiece()
    rng = np.random.default_rng(0)
    words = "free lunch dog park the a 25 cafes every 100 ft gym nap pod salary".split()
    xs = [" ".join(rng.choice(words, rng.integers(1, 8))) for _ in range(20)]
    J = jaccard_matrix(wordpiece_sets(xs[:10], tok), wordpiece_sets(xs[10:], tok))
    for i in range(10):
        for j in range(10):
            a, b = set(wordpieces(tok, xs[i])), set(wordpieces(tok, xs[10 + j]))
            assert J[i, j] == pytest.approx(len(a & b) / len(a | b))

def test_idf_and_threshold():
    s = idf(["a dog park", "a gym", "a gym and a dog"])
    assert s["park"] == pytest.approx(np.log(3)) and s["gym"] == pytest.approx(np.log(1.5)) and "a" not in s.index
    t, f = f1_threshold_search(np.array([0.1, 0.9, 0.8]), np.array([0, 1, 1]))
    assert f == 1.0 and f1_pos([0, 1, 1], np.array([0.1, 0.9, 0.8]) >= t) == 1.0
