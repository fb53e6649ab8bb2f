"""Every kind of export served and fed the hostile set: SQuAD v1.1 and v2.0, CMRC
2018, token classification with and without a CRF, windowed classification and
multiple choice (slow tier: an export and a server each).

Each signature's text inputs get the hostile texts (empty, whitespace, emoji,
20,000 characters, control characters, Chinese), wrong types, deep nesting and,
for `encoded`, ids outside their ranges: every answer is 200 or a JSON 4xx,
never a 5xx, and the server answers a valid request after them.
"""

import os

import pytest

pytest.importorskip("kserve", reason="albert-tf serve needs requirements-serve.txt installed")

import export_helpers  # noqa: E402
import serve_helpers  # noqa: E402

TEXTS = serve_helpers.HOSTILE + ["叶" * 20000, "x " * 10000]


def _export(tmp_path_factory, name):
    if name in ("squad", "squad_v2"):
        return export_helpers.exported(tmp_path_factory, name)[0]
    folder = tmp_path_factory.mktemp(name)
    options = {"cmrc2018": ("cmrc2018", {"max_query_length": 8, "doc_stride": 8}),
               "ner": ("token_classification", {"entity_tags": "O,B-LOC,I-LOC"}),
               "ner_crf": ("token_classification", {"entity_tags": "O,B-LOC,I-LOC",
                                                    "crf": True}),
               "windowed": ("iflytek", {"long_inputs": "window"}),
               "c3": ("c3", {"max_qa_length": 8})}[name]
    return export_helpers.chinese_export(folder, options[0], **options[1])


def _bodies(inputs):
    """Hostile bodies for a signature's inputs `{name: (dtype, rank)}`."""
    def value(text, rank):
        return [text, text, ""] if rank == 2 else text

    rows = [{n: value(t, r) for n, (_, r) in inputs.items()} for t in TEXTS]
    yield {"instances": rows[:4]}, (200,)
    for row in rows[4:]:
        yield {"instances": [row]}, (200,)
    yield {"instances": [{n: 7 for n in inputs}]}, (400,)
    yield {"inputs": {n: [[["a"]]] for n in inputs}}, (400,)
    yield "[" * 2000, (400,)
    yield {"signature_name": 3, "instances": rows[:1]}, (400,)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["squad", "squad_v2", "cmrc2018", "ner", "ner_crf",
                                  "windowed", "c3"])
def test_each_export_answers_the_hostile_set_with_200_or_a_json_4xx(tmp_path_factory, name):
    version_dir = _export(tmp_path_factory, name)
    server = serve_helpers.Server(os.path.dirname(version_dir), "--max_rows_per_request=500",
                                  name=name)
    try:
        signatures = server.get(f"/v1/models/{name}/metadata")[1]["metadata"][
            "signature_def"]["signature_def"]
        inputs = {n: (v["dtype"], len(v["tensor_shape"]["dim"]))
                  for n, v in signatures["serving_default"]["inputs"].items()}
        for body, allowed in _bodies(inputs):
            status, answer = server.predict(body)
            assert status in allowed, (name, str(body)[:80], status, answer)
            if status != 200:
                assert isinstance(answer, dict) and "\n" not in answer["error"], answer
        encoded = signatures["encoded"]["inputs"]
        bad = {n: [[2, -5, 1]] for n in encoded}
        status, answer = server.predict({"signature_name": "encoded", "inputs": bad})
        assert status == 400 and "must hold values in [0, " in answer["error"], answer
        if any(rank == 2 for _, rank in inputs.values()):
            # Rows are counted as questions x choices: 1 question of 20,000 choices is 413.
            row = {n: (["a"] * 20000 if r == 2 else "a") for n, (_, r) in inputs.items()}
            status, answer = server.predict({"instances": [row]})
            assert status == 413 and "20000 model rows" in answer["error"], answer
            row = {n: (["a"] * 400 if r == 2 else "a") for n, (_, r) in inputs.items()}
            assert server.predict({"instances": [row]})[0] == 200
        status, _ = server.predict({"instances": [{n: value for n, value in zip(
            inputs, (["A man.", "A dog."] if r == 2 else "A man sleeps."
                     for _, r in inputs.values()))}]})
        assert status == 200
    finally:
        returncode, _, output = server.stop()
    assert returncode == 0, output[-3000:]
