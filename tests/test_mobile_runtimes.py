"""The phone exports in the runtimes phones use (slow tier; `make test-mobile`).

- MediaPipe's `TextClassifier` and `TextEmbedder` (the `mediapipe` package, C++ task
  code as on Android and iOS, tokenizing from the model's metadata) give the
  SavedModel's scores and pooled output on raw text.
- The TFLite Task Library's `BertQuestionAnswerer` (`tflite-support`, in its own
  virtual environment, `$ALBERT_TF_TASK_LIBRARY_PYTHON`: its protobuf pin cannot
  share one with TensorFlow) answers as the SavedModel does.
"""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest
import tensorflow as tf

import export_helpers as helpers
from albert_tf.export.formats import Job
from albert_tf.export.formats.phone import writing
from albert_tf.tasks import finetuned
from albert_tf.tasks.finetuned import export_model

pytestmark = pytest.mark.slow

TEXTS = ["A gorgeous, witty film.", "Ça n'a AUCUN intérêt... 12,345 times ``dull''",
         "  The SECOND half drags;\tthe first is naïve fun.  ", "ok"]
QUESTIONS = [("Who wrote the book?", "Anna wrote the book in 1990, in Paris, then left."),
             ("Where did she live?", "She lived in Paris for ten years before moving to Rome."),
             ("How much did it cost?", "The bridge cost $1,250,000 and opened in 1932.")]
# The Task Library's BertQuestionAnswerer packs inputs of exactly this many tokens.
TASK_LIBRARY_LENGTH = 384


@pytest.fixture(scope="module")
def sst2(tmp_path_factory):
    path, model_dir, *_ = helpers.exported(tmp_path_factory, "sst2")
    module, _ = finetuned.build_serving_module(model_dir)
    out = tmp_path_factory.mktemp("mobile")
    job = Job(module, model_dir=model_dir)
    writing.write_classifier(job, "float32", str(out / "model.tflite"))
    writing.write_embedder(job, "float32", str(out / "embedder.tflite"))
    return path, module, out


def assert_classifies_as(model_path, labels, typed, expected):
    """MediaPipe's `TextClassifier` on `model_path` scores each text of `typed` as
    `expected` (one row of the SavedModel's probabilities per text, in `labels`' order)."""
    from mediapipe.tasks.python import core, text

    options = text.TextClassifierOptions(base_options=core.base_options.BaseOptions(
        model_asset_path=str(model_path)), max_results=-1)
    with text.TextClassifier.create_from_options(options) as classifier:
        for sentence, want in zip(typed, expected):
            categories = classifier.classify(sentence).classifications[0].categories
            got = {c.category_name: c.score for c in categories}
            np.testing.assert_allclose([got[label] for label in labels], want, atol=1e-5,
                                       err_msg=sentence)


def test_mediapipe_text_classifier_gives_the_saved_models_scores(sst2):
    path, module, out = sst2
    expected = helpers.signature(path)(text=np.array(TEXTS))["probabilities"].numpy()
    assert_classifies_as(out / "model.tflite", module.labels, TEXTS, expected)


def test_mediapipe_text_embedder_gives_the_pooled_output(sst2):
    from mediapipe.tasks.python import core, text

    _, module, out = sst2
    tokenizer = module.tokenizer
    options = text.TextEmbedderOptions(base_options=core.base_options.BaseOptions(
        model_asset_path=str(out / "embedder.tflite")))
    model = module._predict.func
    with text.TextEmbedder.create_from_options(options) as embedder:
        for sentence in TEXTS:
            ids = tokenizer(tf.constant([sentence]))
            packed = module.packer(ids)
            pooled = model.backbone.pooled_output(
                {k: packed[k] for k in ("token_ids", "segment_ids", "padding_mask")})
            got = embedder.embed(sentence).embeddings[0].embedding
            np.testing.assert_allclose(got, pooled.numpy()[0], atol=1e-5, err_msg=sentence)


# Chinese as TNEWS titles come: full-width digits, mixed scripts and case.
TEXTS_ZH = ["军队在山区进行联合演习", "球赛今晚８点开始！", "ABC公司发布新手机 iPhone 15",
            "咖啡馆的拿铁，￥３２一杯", "在"]
# What the runtime's BertTokenizer does not fold (measured: max difference 0.03 in
# the scores without the app's normalization, 6e-8 with it): accents, full-width capitals.
TEXTS_ZH_FOLDED = ["ＡＢＣ公司", "Café 咖啡馆", "ÀÉÎÕÜ 北京", "Ｃａｆé ｉＰｈｏｎｅ"]


def app_normalized(text):
    """SERVING.md's line for an app feeding a WordPiece model: NFD, combining marks
    dropped, lowercased (what ALBERT's and BERT's basic tokenizer do first)."""
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFD", text)
                   if unicodedata.category(c) != "Mn").lower()


def test_mediapipe_classifies_chinese_with_the_wordpiece_vocabulary(tmp_path):
    """A Chinese WordPiece model (BertTokenizerOptions in the metadata): MediaPipe's
    own tokenizer gives the SavedModel's scores on raw Chinese text, and on accented
    or full-width Latin text once the app normalizes it as SERVING.md says."""
    path = helpers.chinese_export(tmp_path, "tnews")
    model_dir = str(tmp_path / "model")
    module, _ = finetuned.build_serving_module(model_dir)
    writing.write_classifier(Job(module, model_dir=model_dir), "float32",
                             str(tmp_path / "zh.tflite"))
    texts = TEXTS_ZH + TEXTS_ZH_FOLDED
    expected = helpers.signature(path)(text=np.array(texts))["probabilities"].numpy()
    typed = TEXTS_ZH + [app_normalized(t) for t in TEXTS_ZH_FOLDED]
    assert_classifies_as(tmp_path / "zh.tflite", module.labels, typed, expected)


ANSWER_SCRIPT = """
import json, sys
from tflite_support.task import text
qa = text.BertQuestionAnswerer.create_from_file(sys.argv[1])
print(json.dumps([[a.text, a.pos.logit] for a in
                  (qa.answer(c, q).answers[:1] for q, c in json.loads(sys.argv[2]))
                  for a in a]))
"""


def test_task_library_answers_as_the_saved_model(tmp_path_factory, monkeypatch):
    python = os.environ.get("ALBERT_TF_TASK_LIBRARY_PYTHON")
    if not python:
        pytest.skip("the Task Library's virtual environment: make test-mobile")
    monkeypatch.setitem(helpers.TINY, "max_sequence_length", TASK_LIBRARY_LENGTH)
    out = tmp_path_factory.mktemp("task_library")
    model_dir, *_ = helpers.finetuned_dir(out, "squad", max_seq_length=TASK_LIBRARY_LENGTH,
                                          doc_stride=128, max_query_length=64,
                                          max_answer_length=30)
    module, _ = finetuned.build_serving_module(model_dir)
    writing.write_question_answerer(Job(module, model_dir=model_dir), "float32",
                                    str(out / "qa.tflite"))
    served = tf.saved_model.load(export_model(model_dir, str(out / "export")))
    expected = served.signatures["serving_default"](
        question=tf.constant([q for q, _ in QUESTIONS]),
        context=tf.constant([c for _, c in QUESTIONS]))
    done = subprocess.run([python, "-c", ANSWER_SCRIPT, str(out / "qa.tflite"),
                           json.dumps(QUESTIONS)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    # The same span, by the same score; the Task Library widens an answer to whole
    # whitespace-separated words ("$1,2" inside "$1,250,000" is "$1,250,000").
    np.testing.assert_allclose([s for _, s in answers], expected["score"].numpy(), atol=1e-4)
    for (got, _), want, (_, context) in zip(answers, expected["answer"].numpy(), QUESTIONS):
        words = context.split()
        assert want.decode() in got and any(
            " ".join(words[i:j]) == got for i in range(len(words))
            for j in range(i + 1, len(words) + 1)), (got, want)


ROOT = pathlib.Path(__file__).resolve().parent.parent
MEDIAPIPE_WEB = ROOT / "node_modules" / "@mediapipe" / "tasks-text"


@pytest.mark.skipif(not os.path.exists(os.environ.get("CHROMIUM", "/usr/bin/chromium")),
                    reason="no Chromium (apt-get install chromium)")
@pytest.mark.skipif(not MEDIAPIPE_WEB.exists(), reason="node_modules is missing: make web-deps")
def test_browser_mediapipe_gives_the_saved_models_scores(sst2, tmp_path):
    """SERVING.md's web snippet: @mediapipe/tasks-text in headless Chromium loads the file."""
    import functools
    import http.server
    import shutil
    import threading

    path, module, out = sst2
    site = tmp_path / "site"
    shutil.copytree(MEDIAPIPE_WEB / "wasm", site / "wasm")
    shutil.copy(MEDIAPIPE_WEB / "text_bundle.mjs", site)
    shutil.copy(out / "model.tflite", site)
    (site / "index.html").write_text("<!doctype html><title>mediapipe</title>")
    (tmp_path / "texts.json").write_text(json.dumps(TEXTS), encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = subprocess.run(
            ["node", str(ROOT / "tests" / "web" / "drive_mediapipe.mjs"),
             f"http://127.0.0.1:{server.server_address[1]}/index.html",
             str(tmp_path / "texts.json"), str(tmp_path / "scores.json")],
            capture_output=True, text=True, timeout=300)
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr[-3000:]
    scores = json.loads((tmp_path / "scores.json").read_text(encoding="utf-8"))
    expected = helpers.signature(path)(text=np.array(TEXTS))["probabilities"].numpy()
    got = [[row[label] for label in module.labels] for row in scores]
    np.testing.assert_allclose(got, expected, atol=1e-5)
