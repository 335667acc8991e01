"""Ids by segments equal whole-prompt ids, for every utility prompt over the bundled samples'
real questions and passages, through each tokenizer the tests can load: the bundled SmolLM2's,
the tiny Llama 3.1's (SmolLM2's vocabulary with Llama 3.1's special tokens and chat template),
SmolLM2's under Qwen3's chat template, and each of these with Llama 3's and Qwen2/3's own
pre-tokenizer regex (and Qwen's NFC normalizer), where a newline must go with the piece before
it. A tokenizer whose normalizer reads the whole text gets no cut and is encoded whole."""

from __future__ import annotations

import copy

import pytest
from support.templates import THINKING_TEMPLATE
from tokenizers import Regex, normalizers, pre_tokenizers
from transformers import AutoTokenizer

from labeler.llm.prompts import _whole_encoder, encode, render_chat
from labeler.llm.segments import AFTER, BEFORE, cut_of, encode_by_segments, split
from labeler.sources import load_source
from labeler.tasks.utility import closed_book_prompt, passage_prompt

#: meta-llama/llama3, llama/tokenizer.py (commit 0053e6ba60b775af5addf6198e17d122968c0e83),
#: `Tokenizer.pat_str`: Llama 3's (and 3.1's) split regex
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
#: transformers 5.19.0, models/qwen2/tokenization_qwen2.py, PRETOKENIZE_REGEX: Qwen2's and
#: Qwen3's (which use Qwen2Tokenizer), with an NFC normalizer
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
              r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
#: passages a query's prompts hold: one-passage prompts, then the all-passage one
K = 5


def _prompts(name: str, versions: tuple[int, ...], limit: int | None = None) -> list:
    """Every utility prompt of a sample's first `limit` queries: closed-book, one per passage
    and with all K (passages taken in corpus order, K a query), as each of prompt `versions`
    shows them (1 keeps a title's or text's edge white space)."""
    source = load_source(name, limit=limit)
    passages = source.corpus.passages
    chats = []
    for n, query in enumerate(source.queries):
        pool = [passages[(n * K + r) % len(passages)] for r in range(K)]
        chats.append(closed_book_prompt(query.question))
        for version in versions:
            chats += [passage_prompt(query.question, [p], version=version) for p in pool]
            chats.append(passage_prompt(query.question, pool, version=version))
    return chats


@pytest.fixture(scope="module")
def chats() -> list:
    return (_prompts("nq-sample", (2,)) + _prompts("nq-sample", (1,), limit=50)
            + _prompts("cisi-sample", (2, 1)))


def _regex(tokenizer, split_regex: str, normalizer=None):
    """`tokenizer` with a pre-tokenizer splitting by `split_regex` then mapping bytes, as
    Llama 3's and Qwen's tokenizer.json set it."""
    changed = copy.deepcopy(tokenizer)
    rust = changed.backend_tokenizer
    rust.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(split_regex), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    if normalizer is not None:
        rust.normalizer = normalizer
    return changed


@pytest.fixture(scope="module")
def tokenizers(smollm, llama_repo, tmp_path_factory) -> dict:
    """name -> (tokenizer, the cut it must get)."""
    folder = tmp_path_factory.mktemp("tiny-llama")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (folder / name).write_bytes(llama_repo[name])
    llama = AutoTokenizer.from_pretrained(folder)
    qwen = copy.deepcopy(smollm.tokenizer)
    qwen.chat_template = THINKING_TEMPLATE
    return {
        "smollm2": (smollm.tokenizer, AFTER),
        "tiny llama 3.1": (llama, AFTER),
        "smollm2, qwen3 template": (qwen, AFTER),
        "tiny llama 3.1, llama 3 regex": (_regex(llama, LLAMA3_SPLIT), BEFORE),
        "qwen3 template, qwen regex + NFC": (_regex(qwen, QWEN_SPLIT, normalizers.NFC()),
                                             BEFORE),
    }


@pytest.mark.parametrize("name", ["smollm2", "tiny llama 3.1", "smollm2, qwen3 template",
                                  "tiny llama 3.1, llama 3 regex",
                                  "qwen3 template, qwen regex + NFC"])
def test_ids_by_segments_are_the_whole_prompts_ids(tokenizers, chats, name):
    tokenizer, cut = tokenizers[name]
    whole = _whole_encoder(tokenizer)
    texts = [render_chat(tokenizer, c) for c in chats]

    assert cut_of(tokenizer, whole) == cut
    assert encode(tokenizer, texts) == whole(texts)
    # the passages are pieces: far fewer distinct pieces than whole prompts' text
    pieces = {p for t in texts for p in split(t, cut)}
    assert sum(map(len, pieces)) < 0.5 * sum(map(len, texts))


def test_a_call_whose_every_piece_is_known_asks_the_tokenizer_nothing(smollm, chats):
    tokenizer = copy.deepcopy(smollm.tokenizer)
    whole = _whole_encoder(tokenizer)
    texts = [render_chat(tokenizer, c) for c in chats[:5]]
    asked = []

    def counted(batch):
        asked.append(len(batch))
        return whole(batch)

    first = encode_by_segments(tokenizer, texts, counted)
    again = encode_by_segments(tokenizer, texts, counted)  # e.g. a rubric's P(yes) base prompt

    assert first == again == whole(texts)
    assert 0 not in asked  # transformers 5's fast tokenizers raise IndexError on no texts


def test_a_normalizer_that_reads_the_whole_text_gets_whole_encoding(smollm, chats):
    prepending = copy.deepcopy(smollm.tokenizer)  # Llama 2's and Mistral's normalizer
    prepending.backend_tokenizer.normalizer = normalizers.Sequence(
        [normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    whole = _whole_encoder(prepending)
    texts = [render_chat(prepending, c) for c in chats[:50]]

    assert cut_of(prepending, whole) is None
    assert encode(prepending, texts) == whole(texts)


def test_the_debug_switch_checks_every_prompt(smollm, chats, monkeypatch):
    from labeler.llm import segments

    tokenizer = copy.deepcopy(smollm.tokenizer)
    texts = [render_chat(tokenizer, c) for c in chats[:20]]
    monkeypatch.setattr(segments._of(tokenizer, _whole_encoder(tokenizer)), "cut", BEFORE)
    monkeypatch.delenv("LABELER_CHECK_TOKENS")  # the session's setting (tests/conftest.py)
    assert encode(tokenizer, texts) != _whole_encoder(tokenizer)(texts)  # unchecked: wrong

    monkeypatch.setenv("LABELER_CHECK_TOKENS", "1")
    with pytest.raises(RuntimeError, match=r"LABELER_CHECK_TOKENS: prompt \d+'s ids by "
                                           r"segments differ from its whole encoding"):
        encode(tokenizer, texts)


def test_the_test_session_checks_every_prompt_also_in_workers():
    from labeler import settings

    assert settings.check_tokens()  # tests/conftest.py: every test build's prompts checked
    assert settings.passed_to_workers()[settings.CHECK_TOKENS] == "1"  # Ray's runtime_env
