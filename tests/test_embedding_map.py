"""MUSE-style alignment (TreLM step 1): the adversarial map stays orthogonal, CSLS undoes hubs, Procrustes and its
refinement recover a hidden rotation, precision@1 counts any gold translation."""
import torch

from xlt.align.embedding_map import (AdversarialSettings, adversarial_map, csls, orthogonalize, precision_at_1,
                                     procrustes, refine)


def rotation(dim, seed):
    q, _ = torch.linalg.qr(torch.randn(dim, dim, generator=torch.Generator().manual_seed(seed)))
    return q


def test_orthogonalize_pulls_towards_orthogonal_and_the_adversarial_map_stays_there():
    W = torch.eye(8) + 0.05 * torch.randn(8, 8, generator=torch.Generator().manual_seed(0))
    errors = []
    for _ in range(200):
        errors.append(float(torch.linalg.norm(W @ W.T - torch.eye(8))))
        W = orthogonalize(W, 0.05)
    assert errors[-1] < 0.01 * errors[0]
    src = torch.randn(300, 8, generator=torch.Generator().manual_seed(1))
    tgt = src @ rotation(8, 2).T
    runs = {}
    for beta in (0.0, 0.01):
        settings = AdversarialSettings(epochs=2, epoch_size=3200, batch_size=32, discriminator_hidden=32,
                                       most_frequent=300, lr=0.01, beta=beta)
        runs[beta] = adversarial_map(src, tgt, settings)
    W, log = runs[0.01]
    assert len(log) == 2 and all(e["orthogonality_error"] < 0.01 for e in log)
    assert torch.linalg.norm(W @ W.T - torch.eye(8)) < 0.01
    assert runs[0.0][1][-1]["orthogonality_error"] > 2 * log[-1]["orthogonality_error"]  # without it W drifts


def test_csls_prefers_the_translation_to_a_hub():
    # sources e1..e3; target 0 is a hub (e1 + e2 + e3: cosine 0.58 to every source); target i is the translation of
    # source i - 1 (e_i + 1.5 e_{3+i}: cosine 0.55, and 0 to the other sources)
    eye = torch.eye(6)
    src = eye[:3]
    tgt = torch.stack([eye[0] + eye[1] + eye[2]] + [eye[i] + 1.5 * eye[3 + i] for i in range(3)])
    plain = (torch.nn.functional.normalize(src, dim=1) @ torch.nn.functional.normalize(tgt, dim=1).T).argmax(1)
    assert plain.tolist() == [0, 0, 0]  # nearest-neighbour retrieval: the hub wins for every word
    assert csls(src, tgt, k=2).argmax(1).tolist() == [1, 2, 3]
    assert precision_at_1(src, tgt, {0: {1}, 1: {0, 2}, 2: {3}}, k=2) == 1.0  # any gold translation counts
    assert precision_at_1(src, tgt, {0: {2}, 1: {2}, 2: {3}}, k=2) == 2 / 3


def test_procrustes_and_refinement_recover_a_rotation():
    g = torch.Generator().manual_seed(3)
    src = torch.randn(500, 16, generator=g)
    Q = rotation(16, 4)
    tgt = src @ Q.T + 0.01 * torch.randn(500, 16, generator=g)
    W = procrustes(src, tgt, torch.stack([torch.arange(500), torch.arange(500)], 1))
    assert torch.allclose(W, Q, atol=1e-2)
    # refinement from a map that is only close: the induced dictionary pulls it to the rotation
    start = procrustes(src, tgt, torch.stack([torch.arange(40), torch.arange(40)], 1))
    W2, log = refine(src, tgt, start, iterations=3, max_rank=500)
    test = {i: {i} for i in range(400, 500)}
    assert precision_at_1(src @ W2.T, tgt, test) == 1.0 and log[-1]["dictionary_pairs"] > 400


def test_new_vocabulary_and_its_fasttext_vectors(tmp_path):
    import pytest
    pytest.importorskip("gensim", reason="gensim (extra trelm) is not installed")
    from xlt.align.subword_vectors import SPECIALS, fasttext_vectors, train_wordpiece, word_vectors

    text = tmp_path / "es.txt"
    text.write_text("\n".join(["la casa es pequeña", "el perro come en la casa", "la casa grande",
                               "el gato duerme", "el perro y el gato"] * 20) + "\n", encoding="utf-8")
    tok = train_wordpiece([text], vocab_size=120, min_frequency=1)
    vocab = tok.get_vocab()
    assert all(s in vocab for s in SPECIALS) and "casa" in vocab and "pequeña" in tok.encode("pequeña").tokens
    enc = tok.encode("La Casa")
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]" and "casa" in enc.tokens  # lower-cased
    vectors, report = fasttext_vectors(tok, [text], dim=16, epochs=3, seed=1)
    again, _ = fasttext_vectors(tok, [text], dim=16, epochs=3, seed=1)
    assert vectors.shape == (len(vocab), 16) and torch.equal(vectors, again)  # seeded, one worker: reproducible
    assert report["sentences"] == 100 and report["entries_seen_in_text"] > 10
    both = word_vectors(["casa", "perro gato"], tok, vectors)
    assert torch.allclose(both[0], vectors[vocab["casa"]])
    assert torch.allclose(both[1], (vectors[vocab["perro"]] + vectors[vocab["gato"]]) / 2)


def test_the_same_text_gives_the_same_wordpiece_vocabulary(tmp_path):
    """tokenizers' trainer alone numbers the ``##c`` pieces in hash-map order and breaks merge ties by those ids
    (huggingface/tokenizers#1794): on this text 20 trainings gave 20 vocabularies.  Ours: one, ``##c`` ordinary."""
    from xlt.align.subword_vectors import SPECIALS, train_wordpiece

    text = tmp_path / "t.txt"
    text.write_text("\n".join(["la casa es pequeña", "el perro come en la casa", "la casa grande", "el gato duerme",
                               "el perro y el gato", "abcd efgh ijkl mnop", "qrst uvwx yzab cdef"] * 20) + "\n",
                    encoding="utf-8")
    vocabularies = {tuple(sorted(train_wordpiece([text], 90, min_frequency=1).get_vocab().items())) for _ in range(8)}
    assert len(vocabularies) == 1
    tok = train_wordpiece([text], 90, min_frequency=1)
    assert sorted(tok.get_added_tokens_decoder()) == [tok.token_to_id(s) for s in SPECIALS]  # "##c" not special
    assert len(tok.get_vocab()) == 90 and "##a" in tok.get_vocab()
    assert tok.decode(tok.encode("el perro duerme").ids) == "el perro duerme"


def _toy_pair(tmp_path):
    """Ten English words in 59 lines, a 'language' that spells each backwards, an English WordPiece vocabulary."""
    from xlt.align.subword_vectors import train_wordpiece

    words = ["house", "dog", "cat", "eats", "sleeps", "small", "big", "the", "in", "garden"]
    lines = [" ".join(words[(i * k) % 10] for k in range(1, 6)) for i in range(1, 60)]
    en, xx = tmp_path / "en.txt", tmp_path / "xx.txt"
    en.write_text("\n".join(lines) + "\n", encoding="utf-8")
    xx.write_text("\n".join(" ".join(w[::-1] for w in line.split()) for line in lines) + "\n", encoding="utf-8")
    en_tok = train_wordpiece([en], vocab_size=80, min_frequency=1)
    return words, en, xx, en_tok


def test_migrate_vocabulary_end_to_end_on_a_toy_pair(tmp_path):
    import pytest
    pytest.importorskip("gensim", reason="gensim (extra trelm) is not installed")
    from xlt.align.migrate_vocabulary import VocabularySettings, migrate_vocabulary
    from xlt.align.subword_vectors import fasttext_vectors

    words, en, xx, en_tok = _toy_pair(tmp_path)
    en_emb, _ = fasttext_vectors(en_tok, [en], dim=12, epochs=3)
    settings = VocabularySettings(vocab_size=120, fasttext_epochs=3, refinement_iterations=2,
                                  adversarial=AdversarialSettings(epochs=1, epoch_size=320, discriminator_hidden=16,
                                                                  most_frequent=100))
    test = [(w[::-1], w) for w in words]
    seen = []
    tok, matrix, report = migrate_vocabulary([en], [xx], en_tok, en_emb, test, words, settings,
                                             torch.ones(en_emb.shape[0]), log=seen.append)
    assert matrix.shape == (tok.get_vocab_size(), 12) and "esuoh" in tok.get_vocab()
    copied = [i for t, i in tok.get_vocab().items() if t in en_tok.get_vocab() and not t.startswith("[")]
    assert report["rows_copied_from_english"] == len(copied) > 0
    for t, i in tok.get_vocab().items():  # shared entries: the English row itself; the others: mapped, rescaled
        if i in copied:
            assert torch.equal(matrix[i], en_emb[en_tok.token_to_id(t)])
        else:
            assert torch.allclose(matrix[i].norm(), en_emb.norm(dim=1).mean(), atol=1e-4)
    steps = {"identity", "adversarial", "adversarial+procrustes", "identical_strings", "identical_strings+procrustes",
             "similarity_seed", "similarity_seed+procrustes"}
    assert set(report["precision_at_1"]) == steps | {"initialised_rows"} and seen
    assert all(0 <= v["all"] <= 1 and 0 <= v["different_strings"] <= 1 for v in report["precision_at_1"].values())
    assert report["identical_string_anchors"] >= len(words) and report["initialised_by"] == "identical_strings"
    assert report["initialising_step"] == "identical_strings+procrustes"
    assert 0 <= report["heldout_anchors"]["procrustes_precision_at_1"] <= 1


def test_identical_string_anchors_recover_a_rotation(tmp_path):
    """Both vocabularies spell most pieces alike; the target space is a rotation of the source one: Procrustes on the
    identical-string anchors finds that rotation (rows of the English space in frequency order)."""
    import pytest
    pytest.importorskip("gensim", reason="gensim (extra trelm) is not installed")
    from xlt.align.embedding_map import procrustes
    from xlt.align.migrate_vocabulary import identical_string_pairs
    from xlt.align.subword_vectors import train_wordpiece

    text = tmp_path / "t.txt"
    text.write_text("\n".join(["the house is small", "the dog eats", "a cat sleeps in the garden"] * 5) + "\n")
    other = tmp_path / "o.txt"
    other.write_text("\n".join(["the house is big", "el perro come", "a cat sleeps"] * 5) + "\n")
    new, english = train_wordpiece([text, other], 90, min_frequency=1), train_wordpiece([text], 70, min_frequency=1)
    order = torch.randperm(english.get_vocab_size(), generator=torch.Generator().manual_seed(0))
    pairs = identical_string_pairs(new, english, order)
    for new_id, row in pairs.tolist():
        assert new.id_to_token(new_id) == english.id_to_token(int(order[row]))
    assert len(pairs) > 20 and "[CLS]" not in {new.id_to_token(i) for i in pairs[:, 0].tolist()}
    g = torch.Generator().manual_seed(1)
    rotation = torch.linalg.qr(torch.randn(8, 8, generator=g))[0]
    source = torch.randn(new.get_vocab_size(), 8, generator=g)
    target = torch.zeros(english.get_vocab_size(), 8)
    target[pairs[:, 1]] = source[pairs[:, 0]] @ rotation.T
    assert torch.allclose(procrustes(source, target, pairs), rotation, atol=1e-4)
    # held-out anchors: a rotation is found from half of them and retrieves the other half; unrelated spaces fail
    from xlt.align.embedding_map import heldout_anchor_precision
    rotated = heldout_anchor_precision(source, target, pairs)
    assert rotated["anchors_fit"] + rotated["anchors_test"] == len(pairs)
    assert rotated["procrustes_precision_at_1"] == rotated["least_squares_precision_at_1"] == 1.0
    noise = torch.randn(english.get_vocab_size(), 8, generator=g)
    assert heldout_anchor_precision(source, noise, pairs)["procrustes_precision_at_1"] < 0.5


def test_nearest_rows_is_a_softmax_weighted_mean_of_the_nearest_keys():
    from xlt.align.fasttext_bridge import nearest_rows

    keys = torch.nn.functional.normalize(torch.randn(50, 8, generator=torch.Generator().manual_seed(0)), dim=1)
    rows = torch.randn(50, 4, generator=torch.Generator().manual_seed(1))
    # a query equal to a key, at a low temperature: that key's row
    assert torch.allclose(nearest_rows(keys[[7, 3]], keys, rows, neighbours=5, temperature=1e-3), rows[[7, 3]],
                          atol=1e-5)
    # one neighbour: the nearest key's row; many at a high temperature: close to the plain mean of the k nearest
    q = torch.nn.functional.normalize(torch.randn(3, 8, generator=torch.Generator().manual_seed(2)), dim=1)
    assert torch.equal(nearest_rows(q, keys, rows, 1, 0.1), rows[(q @ keys.T).argmax(1)])
    top = (q @ keys.T).topk(4, dim=1).indices
    assert torch.allclose(nearest_rows(q, keys, rows, 4, 1e6), rows[top].mean(1), atol=1e-4)


def test_migrate_vocabulary_through_the_english_fasttext_space(tmp_path):
    """map_into english_fasttext (WECHSEL-style bridge): every new row is a convex combination of English rows,
    specials and shared strings keep the English model's own rows, P@1 of each map and of the rows is reported."""
    import pytest
    pytest.importorskip("gensim", reason="gensim (extra trelm) is not installed")
    from xlt.align.migrate_vocabulary import VocabularySettings, migrate_vocabulary
    from xlt.align.subword_vectors import SPECIALS

    words, en, xx, en_tok = _toy_pair(tmp_path)
    en_emb = torch.randn(en_tok.get_vocab_size(), 12, generator=torch.Generator().manual_seed(0))
    settings = VocabularySettings(vocab_size=120, fasttext_epochs=3, refinement_iterations=2,
                                  map_into="english_fasttext",
                                  bridge_dim=8, alignment="adversarial",
                                  adversarial=AdversarialSettings(epochs=1, epoch_size=320, discriminator_hidden=16))
    test = [(w[::-1], w) for w in words]
    tok, matrix, report = migrate_vocabulary([en], [xx], en_tok, en_emb, test, words, settings,
                                             torch.ones(en_emb.shape[0]), log=lambda _: None)
    assert matrix.shape == (tok.get_vocab_size(), 12) and torch.isfinite(matrix).all()
    vocab = tok.get_vocab()
    for t in SPECIALS:
        assert torch.equal(matrix[vocab[t]], en_emb[en_tok.token_to_id(t)])
    shared = [t for t in vocab if t in en_tok.get_vocab() and t not in SPECIALS]
    assert shared and report["rows_copied_from_english"] == len(shared)
    for t in shared:
        assert torch.equal(matrix[vocab[t]], en_emb[en_tok.token_to_id(t)])
    # the other rows lie in the convex hull of English rows: no row longer than the longest English row
    assert matrix.norm(dim=1).max() <= en_emb.norm(dim=1).max() + 1e-5
    steps = {f"fasttext_{m}" for m in ("adversarial", "adversarial+procrustes", "identical_strings",
                                       "identical_strings+procrustes", "similarity_seed", "similarity_seed+procrustes")}
    steps |= {"initialised_rows"}
    assert set(report["precision_at_1"]) == steps
    assert all(0 <= v["all"] <= 1 for v in report["precision_at_1"].values())
    assert report["initialising_step"] == "fasttext_adversarial+procrustes" and report["map_into"] == "english_fasttext"
    assert report["bridge"]["target_entries_seen"] > 0 and report["bridge"]["english_entries_seen"] > 0


def test_vecmap_similarity_seed_then_refinement_recovers_a_rotation_without_any_dictionary():
    """Two isomorphic spaces (a rotation, noise, the frequency ranks slightly shuffled): VecMap's similarity seed
    finds part of the bijection with no dictionary and no shared strings, Procrustes refinement the rest."""
    from xlt.align.embedding_map import procrustes, refine
    from xlt.align.embedding_map import Normaliser
    from xlt.align.vecmap import similarity_seed

    g = torch.Generator().manual_seed(0)
    n, d = 800, 24
    X = torch.randn(n, d, generator=g) @ torch.diag(torch.linspace(3, 0.3, d))
    Q, _ = torch.linalg.qr(torch.randn(d, d, generator=g))
    perm = torch.arange(n)
    perm[0:-1:7], perm[1::7] = perm[1::7].clone(), perm[0:-1:7].clone()  # neighbours in frequency swap ranks
    Z = (X @ Q.T)[perm] + 0.3 * torch.randn(n, d, generator=g)
    X, Z = Normaliser(X)(X), Normaliser(Z)(Z)
    gold = torch.empty(n, dtype=torch.long)
    gold[perm] = torch.arange(n)
    seed = similarity_seed(X, Z, words=600)
    seed_accuracy = (gold[seed[:, 0]] == seed[:, 1]).float().mean()
    assert 0.1 < seed_accuracy < 1  # a noisy seed
    W, _ = refine(X, Z, procrustes(X, Z, seed), iterations=3)
    assert torch.allclose(W @ W.T, torch.eye(d), atol=1e-4)
    assert ((X @ W.T @ Z.T).argmax(1) == gold).float().mean() > 0.98


def test_whitening_turns_a_linear_relation_into_an_orthogonal_one():
    """Z = X A for a random invertible A: Procrustes between the raw spaces misses pairs, between the whitened
    spaces it finds every one (why the TreLM bridge whitens, as VecMap does)."""
    from xlt.align.embedding_map import procrustes
    from xlt.align.vecmap import Whitener

    g = torch.Generator().manual_seed(0)
    n = 2000
    X = torch.randn(n, 16, generator=g)
    Q, _ = torch.linalg.qr(torch.randn(16, 16, generator=g))
    A = Q @ torch.diag(torch.logspace(-1.5, 1.5, 16))  # a rotation and very unequal scales
    Z = X @ A
    pairs = torch.stack([torch.arange(n), torch.arange(n)], 1)

    def hits(a, b):
        W = procrustes(a, b, pairs)
        return ((a @ W.T) @ b.T).argmax(1).eq(torch.arange(n)).float().mean()

    unit = torch.nn.functional.normalize
    assert hits(unit(X, dim=1), unit(Z, dim=1)) < 0.5
    assert hits(Whitener(X)(X), Whitener(Z)(Z)) == 1.0
