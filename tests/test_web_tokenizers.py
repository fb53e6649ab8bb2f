"""The JavaScript tokenizers of the web export (each vocabulary type's `web_tokenizer`, in
the folder the bundle writes it into) give the host tokenizers' ids and offsets, on every
reference text and on hostile ones."""

import json
import pathlib
import shutil
import subprocess

import pytest

from albert_tf.export.formats.web import bundle as web
from albert_tf.tokenizer.sentencepiece.host import HostTokenizer
from albert_tf.tokenizer.wordpiece.host import HostWordPieceTokenizer

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SHARED = ROOT.parent / "shared" / "fixtures"
NODE = shutil.which("node")
SPM_WASM = ROOT / "node_modules" / "@sctg" / "sentencepiece-js" / "dist" / "index.js"

HOSTILE = [
    "", " ", "\t\n \u3000 ", "  leading and trailing  ", "e\u0301t\u00e9 cafe\u0301",
    "\u0301\u0302 starts with marks", "ΣΟΦΟΣ ΟΔΥΣΣΕΥΣ. Σ ΑΣ, ΑΣ'", "ΌΣΟΣ Σ\u0301Α", "``quoted'' ```x''''",
    "中文字符和日本語のテキスト", "한국어 텍스트입니다", "emoji 👍🏽 🇩🇪 👨‍👩‍👧", "bad \ud800 surrogates \udfff!",
    "1,000,000 and 3,5, 12,", "ﬁ ｆｕｌｌｗｉｄｔｈ Ⅻ ㎏", "\u200b zero\u200bwidth \u00ad soft", "a" * 300,
    "İstanbul ǅ ß ẞ", "\x00\x01 control \ufffd chars",
]

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (needed for the JS tokenizer tests)")


def _references(path):
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line]


def _check(tmp_path, tokenizer, texts):
    bundle = tmp_path / "bundle"
    vocabulary = web.write_tokenizer(bundle, tokenizer)
    cases = tmp_path / "cases.jsonl"
    with cases.open("w", encoding="utf-8") as f:
        for text in texts:
            ids, starts, ends = tokenizer.encode_with_offsets(text)
            # Lone surrogates cannot be written as UTF-8 JSON: ASCII escapes keep them.
            f.write(json.dumps({"text": text, "ids": ids,
                                "offsets": [list(p) for p in zip(starts, ends)]}) + "\n")
    out = subprocess.run([NODE, str(ROOT / "tests" / "web" / "check_tokenizers.mjs"), str(bundle),
                          str(cases), vocabulary], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["checked"] == len(texts)
    assert result["failed"] == 0, result["mismatches"]


def _sources(name, vocab):
    """The copied fixtures, then ../shared's references where they exist and differ."""
    out = [pytest.param(FIXTURES / name, id="fixtures")]
    shared = SHARED / name
    if shared.exists() and any((shared / f).read_bytes() != (FIXTURES / name / f).read_bytes()
                               for f in (vocab, "tokenization_reference.jsonl")):
        out.append(pytest.param(shared, marks=pytest.mark.slow, id="shared"))
    return out


@pytest.mark.skipif(not SPM_WASM.exists(), reason="node_modules is missing: run `make web-deps`")
@pytest.mark.parametrize("source", _sources("spm", "albert_30k_clean.model"))
def test_sentencepiece_matches_host(tmp_path, source):
    model = source / "albert_30k_clean.model"
    tokenizer = HostTokenizer(str(model))
    _check(tmp_path, tokenizer, _references(source / "tokenization_reference.jsonl") + HOSTILE)


@pytest.mark.parametrize("source", _sources("wordpiece", "vocab.txt"))
def test_wordpiece_matches_host(tmp_path, source):
    vocab = source / "vocab.txt"
    tokenizer = HostWordPieceTokenizer(str(vocab))
    _check(tmp_path, tokenizer, _references(source / "tokenization_reference.jsonl") + HOSTILE)
