"""The web page's decoding (`albert_tf/export/formats/web/assets/`'s text.js and decoders, in Node) against the
serving graph's own functions: text cuts, word starts, CRF Viterbi, question windows,
long-text (pair) windows."""

import json
import pathlib
import shutil
import subprocess
import types

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.export.formats.web import bundle as web
from albert_tf.steps import text_limit
from albert_tf.steps import squad_windows
from token_reference import word_starts
from albert_tf.models.crf import LinearChainCRF
from albert_tf.steps import WindowPacker
from albert_tf.tokenizer.sentencepiece.host import HostTokenizer
from conftest import FIXTURES

ROOT = pathlib.Path(__file__).resolve().parents[1]
NODE = shutil.which("node")
SPM = pathlib.Path(FIXTURES) / "spm" / "albert_30k_clean.model"

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (runs the web decoders)")

# Small limits, so that the texts below are cut: a SentencePiece-like rule
# (whitespace weighs 0, the rest 1) and a WordPiece-like one (CJK and
# punctuation weigh max_token_chars; a word cut stays past max_word_chars).
TOKENIZERS = [types.SimpleNamespace(max_token_chars=3, max_word_chars=None, standalone_words=False),
              types.SimpleNamespace(max_token_chars=2, max_word_chars=5, standalone_words=True)]
TEXTS = ["", "   ", "short", "The quick brown fox jumps over the lazy dog " * 3,
         "中文句子，没有空格。日本語のテキスト", "emoji 👍🏽 🇩🇪 and more and more and more",
         " \t\n " * 30 + "x", "a,b.c!d?e" * 6, "Ünïcödé àccents café " * 4]
WORD_TEXTS = ["John Smith lives in New York, near the U.S. border.", "", "!!!", "叶老桂认为，浙商银行",
              "iPhone6s在2014年发布，售价5288元。", "e\u0301t\u00e9 ``quoted''", "<unk> ½ ﬁve"]


def _run(cases, tmp_path):
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases), encoding="utf-8")
    out = subprocess.run([NODE, str(ROOT / "tests" / "web" / "check_decode.mjs"), str(path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _cut_cases():
    cases, expected = [], []
    for tok in TOKENIZERS:
        rules = web.text_rules(tok)
        for tokens, keep in ((4, "first"), (4, "last"), (1, "first"), (9, "last")):
            got = text_limit.cut(tf.constant(TEXTS), tok, tokens, keep).numpy()
            expected += [g.decode("utf-8") for g in got]
            cases += [{"rules": rules, "text": t, "tokens": tokens, "keep": keep} for t in TEXTS]
    return cases, expected


def _viterbi_cases():
    crf = LinearChainCRF(5)
    rng = np.random.default_rng(0)
    potentials = rng.normal(0, 1.5, (4, 7, 5)).astype(np.float32)
    lengths = np.array([7, 3, 1, 0], np.int32)
    expected = crf.decode(tf.constant(potentials), tf.constant(lengths)).numpy()
    scores = {n: getattr(crf, n).numpy().tolist()
              for n in ("transitions", "start_scores", "end_scores")}
    return ({"crf": scores, "potentials": [p[:n].tolist() for p, n in zip(potentials, lengths)]},
            [e[:n].tolist() for e, n in zip(expected, lengths)])


def _window_cases():
    special = {"cls": 2, "sep": 3, "pad": 0}
    cases, expected = [], []
    # (max_seq_length, doc_stride, query length, context length): one window,
    # several, a stride longer than a window, an empty context, an empty query.
    for length, stride, q, n in ((16, 4, 3, 5), (16, 4, 3, 30), (13, 20, 2, 25), (12, 3, 2, 0),
                                 (11, 2, 0, 17), (20, 7, 5, 40)):
        query = list(range(100, 100 + q))
        context = list(range(200, 200 + n))
        windows = squad_windows.make_windows(
            tf.ragged.constant([query], dtype=tf.int32, ragged_rank=1),
            tf.ragged.constant([context], dtype=tf.int32, ragged_rank=1), length, stride,
            (special["cls"], special["sep"], special["pad"]))
        cut = windows.inputs["token_ids"].shape[1]
        pad = length - cut  # the graph cuts to the longest window; the page runs at length
        rows = []
        for w in range(windows.inputs["token_ids"].shape[0]):
            row = {k: windows.inputs[k][w].numpy().tolist() for k in windows.inputs}
            row["token_ids"] += [special["pad"]] * pad
            row["segment_ids"] += [0] * pad
            row["padding_mask"] += [0] * pad
            row["p_mask"] += [1] * pad
            row["context_token"] = windows.context_token[w].numpy().tolist() + [-1] * pad
            row["is_max_context"] = windows.is_max_context[w].numpy().tolist() + [False] * pad
            rows.append(row)
        expected.append(rows)
        cases.append({"head": {"max_seq_length": length, "doc_stride": stride}, "query": query,
                      "context": context, "special": special})
    return cases, expected


def _text_window_cases():
    special = {"cls": 2, "sep": 3, "pad": 0}
    cases, expected = [], []
    # (length, stride, |a|, |b| or None): fits, a windowed, b windowed, b cut to
    # half the budget, stride 0 (half the room), empty texts, one segment.
    for length, stride, n_a, n_b in ((16, 4, 3, 5), (12, 3, 20, 2), (12, 2, 4, 23), (11, 3, 9, 30),
                                     (13, 0, 25, 1), (10, 4, 0, 0), (9, 2, 17, None),
                                     (9, 0, 0, None)):
        a, b = list(range(100, 100 + n_a)), None if n_b is None else list(range(300, 300 + n_b))
        packer = WindowPacker(length, stride, special["cls"], special["sep"], special["pad"])
        out = packer(*[tf.RaggedTensor.from_row_lengths(tf.constant(x, tf.int32), [len(x)])
                       for x in (a, b) if x is not None])
        expected.append([{k: out[k][w].numpy().tolist() for k in
                          ("token_ids", "segment_ids", "padding_mask")}
                         for w in range(out["token_ids"].shape[0])])
        cases.append({"a": a, "b": b, "length": length, "stride": stride, "special": special})
    return cases, expected


def test_decode_js_equals_the_serving_graph(tmp_path):
    cut_cases, cut_expected = _cut_cases()
    assert any(e != c["text"] for e, c in zip(cut_expected, cut_cases)), "nothing cut: weak test"
    host = HostTokenizer(str(SPM))
    spm_rules = web.text_rules(TOKENIZERS[0])
    word_cases, word_expected = [], []
    for text in WORD_TEXTS + TEXTS:
        _, starts, ends = host.encode_with_offsets(text)
        word_cases.append({"rules": spm_rules, "text": text,
                           "offsets": [list(p) for p in zip(starts, ends)]})
        word_expected.append(word_starts(text, starts, ends))
    viterbi_cases, viterbi_expected = _viterbi_cases()
    window_cases, window_expected = _window_cases()
    text_cases, text_expected = _text_window_cases()
    got = _run({"cut": cut_cases, "word_starts": word_cases, "viterbi": viterbi_cases,
                "windows": window_cases, "text_windows": text_cases}, tmp_path)
    assert got["cut"] == cut_expected
    assert got["word_starts"] == word_expected
    assert got["viterbi"] == viterbi_expected
    assert [len(w) for w in got["windows"]] == [len(w) for w in window_expected]
    assert got["windows"] == window_expected
    assert len(text_expected[0]) == 1 and all(len(w) > 1 for w in text_expected[1:5])
    assert got["text_windows"] == text_expected
