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

from albert_tf.export import web

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


def _serve(folder):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


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
    from tasks import finetuned

    model_dir, _, _, _ = export_helpers.finetuned_dir(tmp_path, task_name, max_seq_length=24)
    module, _ = finetuned.build_serving_module(model_dir)
    target = finetuned.run_export(ExportSettings(
        model_dir=model_dir, export_dir=str(tmp_path / "export"), precision="fp32",
        formats="web", web_variant="float32"))["export_dir"]
    names = web.head_settings(module)["inputs"]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(dict(zip(names, row))) + "\n" for row in TEXTS),
                     encoding="utf-8")
    server = _serve(pathlib.Path(target) / "web")
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        out = subprocess.run([NODE, str(ROOT / "tests" / "web" / "drive_page.mjs"), url,
                              str(cases), str(tmp_path / "answers.json")],
                             capture_output=True, text=True, timeout=600)
    finally:
        server.shutdown()
    assert out.returncode == 0, out.stderr[-3000:]
    page = json.loads((tmp_path / "answers.json").read_text(encoding="utf-8"))["answers"]
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
