"""`albert-tf export --web`: the bundle's page, in headless Chromium, answers as the SavedModel."""

import functools
import http.server
import json
import os
import pathlib
import shutil
import subprocess
import threading

import numpy as np
import pytest

from albert_tf.export.formats.web import bundle as web

ROOT = pathlib.Path(__file__).resolve().parents[1]
NODE = shutil.which("node")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
PUPPETEER = ROOT / "node_modules" / "puppeteer-core"

# Twenty inputs: empty, whitespace, long, non-Latin, marks, emoji, digits.
TEXTS = [
    ("", ""), ("   ", "\t"), ("Hello world", "Hi there"), ("The cat sat.", ""),
    ("", "Only the second text."), ("Ünïcödé àccents café", "cafe\u0301 résumé"),
    ("中文句子，没有空格。", "日本語のテキストです"), ("한국어 문장", "Ελληνικά ΟΔΥΣΣΕΥΣ"),
    ("emoji 👍🏽 🇩🇪", "👨‍👩‍👧 family"), ("1,000,000 people", "12,5 and 3,"),
    ("``quoted''", "'single' \"double\""), (" ".join(["long"] * 300), "short"),
    ("short", " ".join(f"word{i}" for i in range(200))), ("ΣΑΣ ΑΣ", "Σ"),
    ("ﬁ ｆｕｌｌｗｉｄｔｈ", "Ⅻ ㎏"), ("tabs\tand\nnewlines", "zero\u200bwidth"),
    ("MiXeD CaSe", "mixed case"), ("a", "b"), ("Пример текста", "نص عربي"),
    ("The company said revenue rose.", "Revenue rose, the company said."),
]


def test_missing_runtime_names_the_make_target(tmp_path):
    with pytest.raises(FileNotFoundError, match="make web-deps") as error:
        web.check_runtime(tmp_path)
    assert "\n" not in str(error.value)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no line per file served
        pass


def test_unknown_wasm_build_is_refused_and_heads_describe_their_decoding(tmp_path,
                                                                        spm_tokenizer):
    from albert_tf.backbone import AlbertBackbone
    from albert_tf.config import AlbertConfig
    from albert_tf.export.classification import ClassifierServing
    from albert_tf.models import AlbertClassifier
    from export_helpers import TINY

    with pytest.raises(ValueError, match="auto, relaxed_simd, compat"):
        web.write(None, None, tmp_path / "web", wasm_build="simd")
    assert not (tmp_path / "web").exists()
    model = AlbertClassifier(AlbertBackbone(AlbertConfig(**TINY)), 2, dropout=0.0)
    windowed = ClassifierServing(model, spm_tokenizer, 16, ["a", "b"], pair=False,
                                 window_stride=4)
    head = web.head_settings(windowed)
    assert (head["kind"], head["inputs"], head["text_tokens"], head["window_stride"]) == \
        ("classification", ["text"], 8 * 16, 4)
    head = web.head_settings(ClassifierServing(model, spm_tokenizer, 16, ["a", "b"], pair=True))
    assert (head["kind"], head["inputs"], head["text_tokens"], head["window_stride"]) == \
        ("classification", ["text_a", "text_b"], 16, None)
    assert head["text"]["max_token_chars"] == spm_tokenizer.max_token_chars


def _serve(folder):
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _page_answers(tmp_path, target, names, rows, timeout):
    """The answers the export's page (served from `target`/web) gives to `rows`
    typed into it (one call a row), from headless Chromium."""
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(dict(zip(names, row))) + "\n" for row in rows),
                     encoding="utf-8")
    server = _serve(pathlib.Path(target) / "web")
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        out = subprocess.run([NODE, str(ROOT / "tests" / "web" / "drive_page.mjs"), url,
                              str(cases), str(tmp_path / "answers.json")],
                             capture_output=True, text=True, timeout=timeout)
    finally:
        server.shutdown()
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads((tmp_path / "answers.json").read_text(encoding="utf-8"))["answers"]


def _saved_model_answers(target, names, rows):
    import tensorflow as tf

    serve = tf.saved_model.load(target).signatures["serving_default"]
    out = serve(**{name: tf.constant([row[i] for row in rows]) for i, name in enumerate(names)})
    answers = {}
    for key, value in out.items():
        value = value.numpy()
        answers[key] = [v.decode("utf-8") for v in value] if value.dtype == object else value
    return answers


@pytest.mark.slow
@pytest.mark.skipif(NODE is None, reason="node is not installed (drives the browser)")
@pytest.mark.skipif(not os.path.exists(CHROMIUM),
                    reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)")
@pytest.mark.skipif(not PUPPETEER.exists(), reason="node_modules is missing: run `make web-deps`")
@pytest.mark.parametrize("task_name", ["mrpc", "stsb"])
def test_page_answers_as_the_saved_model(tmp_path, task_name):
    import export_helpers
    from albert_tf.export.settings import ExportSettings
    from albert_tf.tasks import finetuned

    model_dir, _, _, _ = export_helpers.finetuned_dir(tmp_path, task_name, max_seq_length=24)
    module, _ = finetuned.build_serving_module(model_dir)
    target = finetuned.run_export(ExportSettings(
        model_dir=model_dir, export_dir=str(tmp_path / "export"), precision="fp32",
        formats="web", web_variant="float32"))["export_dir"]
    names = web.head_settings(module)["inputs"]
    page = _page_answers(tmp_path, target, names, TEXTS, timeout=600)
    expected = _saved_model_answers(target, names, TEXTS)
    assert len(page) == len(TEXTS)
    for i, (row, got) in enumerate(zip(TEXTS, page)):
        assert got["typed"] == dict(zip(names, row)), i  # what was typed reached the page
        answer = got["answer"]
        assert set(answer) == set(expected), (i, answer)
        for key, values in expected.items():
            if isinstance(values, list):
                assert answer[key] == [values[i]], (i, key)
            else:
                np.testing.assert_allclose(answer[key][0], values[i], atol=1e-3, err_msg=f"{i} {key}")


# -- Every other task type ---------------------------------------------------------

LONG = " ".join(f"Anna met Bob{i} in Paris." for i in range(120))  # past the text cut
ONE_TEXTS = [
    "", "   ", "John Smith lives in New York, near the U.S. border.", "Anna met Bob in Paris.",
    "中文句子，没有空格。", "日本語のテキストです", "한국어 문장", "Ελληνικά ΟΔΥΣΣΕΥΣ",
    "emoji 👍🏽 🇩🇪 family", "1,000,000 people in 12,5 cities", "``quoted'' 'single'", LONG,
    "Ünïcödé àccents café résumé", "ﬁ ｆｕｌｌｗｉｄｔｈ Ⅻ ㎏", "tabs\tand\nnewlines",
    "MiXeD CaSe Words", "a", "Пример текста", "نص عربي", "!!! ??? ...",
]
QUESTIONS = [  # (question, context)
    ("Who wrote the book?", "Anna wrote the book in 1990, in Paris, then left."),
    ("", ""), ("When?", ""), ("", "Paris is big."), ("x", "y z"),
    ("where did she live", "She lived in Paris for ten years before moving to Rome."),
    ("What?", LONG), (LONG, "A short context."), ("谁写的？", "安娜在巴黎写了这本书。"),
    ("Кто?", "Анна написала книгу."), ("what is ½?", "ﬁve ½ quarters of 12,345 pounds"),
    ("emoji?", "👍🏽 thumbs 🇩🇪 flag"), ("   ", "   spaced   out   "),
    ("When did it rain?", "It rained. " * 8), ("Which city?", "Rome, Paris, Berlin, Madrid."),
    ("a b c d e f g h i j", "k l m n o p q r s t u v w x y z"), ("Ελληνικά;", "ΟΔΥΣΣΕΥΣ ΣΑΣ"),
    ("tabs?", "tabs\tand\nnewlines here"), ("number", "1,000,000 people"),
    ("Who left?", "Bob left. Carl stayed. Anna left too."),
]
CHOICES = [  # (context, question, choices one a line; "" lines are no choice)
    ("Tom walks his dog in the park every morning.", "Tom walks the dog _ .",
     "in the morning\nat night\nafter lunch"),
    ("", "", "a\nb"), ("", "", ""), ("c", "q", "\nonly the second"),
    ("男：你明天去图书馆吗?女：不去，我要去医院。", "女的明天去哪儿?", "图书馆\n医院\n学校\n家"),
    (LONG, LONG, "yes\n" + LONG), ("?!...,,;", "!!!", "。。。\n?\n..."),
    ("Анна пишет.", "Кто пишет?", "Анна\nБоб"), ("emoji 👍🏽", "which?", "👍🏽\n🇩🇪"),
    ("It rained.", "Did it rain?", "yes\nno\nmaybe"), ("   ", "   ", "   \nx"),
    ("Paris is in France.", "Where is Paris?", "France\nItaly\nSpain\nPortugal\nGreece"),
    ("ﬁve ½", "what _ half", "is\nwas"), ("a", "b", "c"),
    ("The cat sat on the mat.", "Where did the cat sit?", "on the mat\nin the hat"),
    ("1,000,000 people", "how many?", "1,000,000\n12,5"), ("ΣΑΣ", "Σ?", "ΑΣ\nΣΑ"),
    ("tabs\tand", "new\tlines", "x y\nz"), ("日本語", "何?", "日本\n語"),
    ("Bob left.", "Who _ left?", "Bob\nAnna\nCarl"),
]


def _token_module(crf):
    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.export.token_classification import TokenClassifierServing
    from export_helpers import SPM, token_model
    from albert_tf.tasks.token_classification import tagging

    tags = tagging.tag_list(["LOC", "PER", "ORG"], "bioes" if crf else "iob2")
    model = token_model(load_tokenizer(SPM, host=True).vocabulary_size, tags, crf, 6 if crf else 3)
    return TokenClassifierServing(model, load_tokenizer(SPM), 12, tags)


def _choice_module():
    from albert_tf.backbone import AlbertBackbone
    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.config import AlbertConfig
    from albert_tf.export.multiple_choice import MultipleChoiceServing
    from albert_tf.models import AlbertMultipleChoice
    from export_helpers import SPM, TINY, randomize

    model = AlbertMultipleChoice(AlbertBackbone(AlbertConfig(**TINY)), dropout=0.0)
    randomize(model, seed=3)
    return MultipleChoiceServing(model, load_tokenizer(SPM), 21, 7, fill_blank=True)


def _multi_label_module():
    from albert_tf.backbone import AlbertBackbone
    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.config import AlbertConfig
    from albert_tf.export.classification import MultiLabelServing
    from albert_tf.models import AlbertClassifier
    from export_helpers import SPM, TINY, randomize

    model = AlbertClassifier(AlbertBackbone(AlbertConfig(**TINY)), 5, dropout=0.0)
    randomize(model, seed=4, scale=0.3)
    return MultiLabelServing(model, load_tokenizer(SPM), 16, ["sports", "politics", "art", "war",
                                                             "food"], 0.5, pair=False)


def _windowed_module():
    """A pair classifier exported from a `--long_inputs=window` run: long texts
    are scored in windows of 16 tokens at a stride of 4, their logits averaged."""
    from albert_tf.backbone import AlbertBackbone
    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.config import AlbertConfig
    from albert_tf.export.classification import ClassifierServing
    from albert_tf.models import AlbertClassifier
    from export_helpers import SPM, TINY, randomize

    model = AlbertClassifier(AlbertBackbone(AlbertConfig(**TINY)), 3, dropout=0.0)
    randomize(model, seed=5)
    return ClassifierServing(model, load_tokenizer(SPM), 16, ["a", "b", "c"], pair=True,
                             window_stride=4)


def _squad_module(tmp_path, qa_head="beam"):
    """A squad_v2 model (`qa_head`) whose no-answer threshold is the median of
    the host's null odds on QUESTIONS: some are answered, some not."""
    import export_helpers
    from albert_tf.tasks import finetuned

    model_dir, task, settings, model = export_helpers.finetuned_dir(
        tmp_path, "squad_v2", max_seq_length=24, qa_head=qa_head)
    odds = sorted(export_helpers.host_squad(task, settings, model, QUESTIONS)[2].values())
    threshold = (odds[len(odds) // 2 - 1] + odds[len(odds) // 2]) / 2
    module, _ = finetuned.build_serving_module(model_dir, null_threshold=threshold)
    return module


def _nested(value):
    """A SavedModel output row as JSON would hold it (strings decoded)."""
    if isinstance(value, np.ndarray):
        return [_nested(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return value.item() if isinstance(value, np.generic) else value


def _assert_same(got, expected, where):
    if isinstance(expected, dict):
        assert isinstance(got, dict) and set(got) == set(expected), (where, got, expected)
        for key in expected:
            _assert_same(got[key], expected[key], f"{where} {key}")
    elif isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), (where, got, expected)
        for i, (g, e) in enumerate(zip(got, expected)):
            _assert_same(g, e, f"{where}[{i}]")
    elif isinstance(expected, float):
        assert abs(got - expected) <= 1e-3, (where, got, expected)
    else:
        assert got == expected, (where, got, expected)


CASES = {  # name: (module builder, raw-text inputs, rows as typed)
    "token_classification": (lambda tmp: _token_module(False), ONE_TEXTS),
    "token_classification_crf": (lambda tmp: _token_module(True), ONE_TEXTS),
    "squad_v2": (_squad_module, QUESTIONS),
    "squad_v2_span_head": (lambda tmp: _squad_module(tmp, "span"), QUESTIONS),
    "multiple_choice": (lambda tmp: _choice_module(), CHOICES),
    "multi_label": (lambda tmp: _multi_label_module(), ONE_TEXTS),
    "windowed_pair_classification": (lambda tmp: _windowed_module(), TEXTS),
}


@pytest.mark.slow
@pytest.mark.skipif(NODE is None, reason="node is not installed (drives the browser)")
@pytest.mark.skipif(not os.path.exists(CHROMIUM),
                    reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)")
@pytest.mark.skipif(not PUPPETEER.exists(), reason="node_modules is missing: run `make web-deps`")
@pytest.mark.parametrize("case", sorted(CASES))
def test_page_answers_as_the_saved_model_for_every_task_type(tmp_path, case):
    """Entities, answers with spans and chosen options, typed into the page,
    are the SavedModel's `serving_default` answers to the same inputs (one row a call)."""
    import tensorflow as tf

    from albert_tf.tokenizer.loading import load_tokenizer
    from albert_tf.export import exporter
    from export_helpers import SPM

    build, rows = CASES[case]
    rows = [row if isinstance(row, tuple) else (row,) for row in rows]
    module = build(tmp_path)
    # (a module built here, with no model folder: its bundle written beside the SavedModel)
    target = exporter.write_export(module, {"task": case}, str(tmp_path / "export" / "1"))
    web.write(module, load_tokenizer(SPM, host=True), pathlib.Path(target) / "web", "float32")
    names = web.head_settings(module)["inputs"]
    page = _page_answers(tmp_path, target, names, rows, timeout=900)
    assert len(page) == len(rows)
    serve = tf.saved_model.load(target).signatures["serving_default"]
    for i, row in enumerate(rows):
        assert page[i]["typed"] == dict(zip(names, row)), i  # what was typed reached the page
        inputs = {n: tf.constant([v.split("\n")] if n == "choices" else [v])
                  for n, v in zip(names, row)}
        expected = {k: _nested(v.numpy()) for k, v in serve(**inputs).items()}
        assert "error" not in page[i]["answer"], page[i]["answer"]
        assert set(page[i]["answer"]) == set(expected), i
        _assert_same(page[i]["answer"], expected, f"{case} row {i}")
    if case.startswith("token"):
        assert any(a["answer"]["num_entities"][0] for a in page), "no entity found: weak test"
    if case.startswith("squad"):
        assert {bool(a["answer"]["answer"][0]) for a in page} == {True, False}
