"""--long_inputs: the windows of `WindowPacker` (equal to the usual packing when a text
fits), the truncation report, and a text whose label is decided by its last word,
classified right with windows and not with truncation, in evaluation and through the
export.

The model of the last two is built, not trained: a classifier whose logits say only
whether one token ("good") is anywhere in its input (`keyword_classifier`), so that
what the windows and their average do is the only thing tested."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import cli_helpers as cli
from albert_tf import tasks
from albert_tf import load_tokenizer
from albert_tf.backbone import AlbertBackbone
from albert_tf.config import AlbertConfig
from albert_tf.steps import SegmentPacker, WindowPacker
from albert_tf.training.finetuning import run, save_finetuned
from albert_tf.training.settings import FinetuneSettings
from albert_tf.tasks.finetuned import export_model
from albert_tf.tasks import long_inputs
from albert_tf.tasks.long_inputs import LongInputOptions

CLASSIFY = tasks.get("text_classification")
SPECIALS = (2, 3, 0)  # cls, sep, pad


def _ragged(rows):
    return tf.ragged.constant(rows, dtype=tf.int32, ragged_rank=1, inner_shape=())


def test_a_text_that_fits_is_one_window_packed_as_usual():
    a, b = _ragged([[5, 6, 7], [8], []]), _ragged([[9, 10], [11, 12, 13, 14], [15]])
    for args in ((a,), (a, b)):
        want = SegmentPacker(9, *SPECIALS)(*args)
        got = WindowPacker(9, 2, *SPECIALS)(*args)
        assert got["text"].numpy().tolist() == [0, 1, 2]
        for name, value in want.items():
            np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_a_long_text_is_covered_by_overlapping_windows_at_the_stride():
    ids = list(range(100, 111))  # 11 tokens, 5 a window
    got = WindowPacker(7, 3, *SPECIALS)(_ragged([ids, [50]]))
    assert got["text"].numpy().tolist() == [0, 0, 0, 1]
    tokens = got["token_ids"].numpy()
    assert tokens[:3].tolist() == [[2, 100, 101, 102, 103, 104, 3], [2, 103, 104, 105, 106, 107, 3],
                                   [2, 106, 107, 108, 109, 110, 3]]
    assert got["padding_mask"].numpy()[3].tolist() == [1, 1, 1, 0, 0, 0, 0]
    # Stride 0: half the room (2 of 5).
    assert WindowPacker(7, 0, *SPECIALS)(_ragged([ids]))["token_ids"].numpy()[:, 1].tolist() \
        == [100, 102, 104, 106]


def test_of_a_pair_the_longer_text_is_windowed_and_the_other_repeated():
    got = WindowPacker(9, 2, *SPECIALS)(_ragged([[5, 6], list(range(20, 28))]),
                                        _ragged([list(range(30, 36)), [7]]))
    tokens, segments = got["token_ids"].numpy(), got["segment_ids"].numpy()
    assert got["text"].numpy().tolist() == [0, 0, 1, 1, 1]
    # b windowed (room 4, a kept whole): [CLS] 5 6 [SEP] b[2k : 2k + 4] [SEP].
    assert tokens[:2].tolist() == [[2, 5, 6, 3, 30, 31, 32, 33, 3],
                                   [2, 5, 6, 3, 32, 33, 34, 35, 3]]
    assert segments[0].tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 1]
    # a windowed (room 5, b = [7] kept): [CLS] a[2k : 2k + 5] [SEP] 7 [SEP].
    assert tokens[2:].tolist() == [[2, 20, 21, 22, 23, 24, 3, 7, 3],
                                   [2, 22, 23, 24, 25, 26, 3, 7, 3],
                                   [2, 24, 25, 26, 27, 3, 7, 3, 0]]
    assert segments[4].tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 0]


def test_window_stride_needs_window_and_the_options_are_flags():
    with pytest.raises(ValueError, match="window_stride=4 needs long_inputs=window"):
        LongInputOptions(window_stride=4)
    with pytest.raises(ValueError, match="long_inputs"):
        LongInputOptions(long_inputs="slide")
    assert "long_inputs" in tasks.get("rte").options_class.field_names()
    assert "window_stride" in CLASSIFY.options_class.field_names()


def keyword_classifier(model, keyword):
    """Sets `model`'s weights so that its "pos" logit is about 90 when `keyword`
    (a token id) is in the input and -1 when not, its "neg" logit 0.

    Only `keyword` has a word embedding; the attention of [CLS] is uniform (zero
    query and key), so [CLS] gets the keyword's share of the tokens, which the
    LayerNorm after it scales to a fixed vector whatever the share (zero stays
    zero); the feed-forward block adds nothing; pooler and classifier read it."""
    for variable in model.weights:
        variable.assign(np.zeros(variable.shape, variable.dtype))
    backbone = model.backbone
    embeddings = backbone.embeddings
    words = np.zeros(embeddings.token_embedding.embeddings.shape, np.float32)
    words[keyword, :2] = [1.0, -1.0]
    embeddings.token_embedding.embeddings.assign(words)
    layer_norms = [embeddings.layer_norm] + [b.layer_norm for b in
                                              backbone.attention_blocks + backbone.ffn_blocks]
    for norm in layer_norms:
        norm.gamma.assign(np.ones(norm.gamma.shape, np.float32))
    embeddings.projection.kernel.assign(np.eye(*embeddings.projection.kernel.shape,
                                               dtype=np.float32))
    block = backbone.attention_blocks[0]
    hidden = backbone.config.hidden_dim
    for dense in (block.value, block.output_dense, backbone.pooler):
        dense.kernel.assign(np.eye(hidden, dtype=np.float32))
    head = np.zeros((hidden, 2), np.float32)
    head[:2, 1] = [50.0, -50.0]
    model.classifier.kernel.assign(head)
    model.classifier.bias.assign(np.array([0.0, -1.0], np.float32))
    return model


def _texts(tokenizer):
    """Texts of 30 tokens, "pos" when the last word is "good" (16 tokens a window)."""
    filler = " ".join(["the"] * 29)
    return [(f"{filler} good", "pos"), (f"{filler} the", "neg"), ("good", "pos"),
            ("the", "neg")]


def _csv(path, rows):
    path.write_text("text,label\n" + "".join(f"{t},{label}\n" for t, label in rows),
                    encoding="utf-8")
    return str(path)


def _keyword_model(tokenizer, settings):
    keyword = tokenizer.encode("good")
    assert len(keyword) == 1 and tokenizer.encode("the")[0] != keyword[0]
    config = AlbertConfig(vocabulary_size=tokenizer.vocabulary_size, num_layers=1,
                          num_heads=1, hidden_dim=6, intermediate_dim=5, embedding_dim=4,
                          max_sequence_length=40)
    keras.utils.set_random_seed(0)
    return keyword_classifier(CLASSIFY.build_model(AlbertBackbone(config), settings),
                              keyword[0])


def _keyword_folder(tmp_path):
    """A fine-tuned text_classification folder of the keyword classifier; its data."""
    tokenizer = load_tokenizer(cli.SPM, host=True)
    rows = _texts(tokenizer)
    train, dev = _csv(tmp_path / "train.csv", rows), _csv(tmp_path / "dev.csv", rows)
    settings = FinetuneSettings(task=CLASSIFY.name, output_dir=str(tmp_path / "init"),
                                classifier_dropout=0.0, max_seq_length=16,
                                task_options={"train_file": train})
    model = _keyword_model(tokenizer, settings)
    folder = str(tmp_path / "keyword")
    save_finetuned(model, CLASSIFY, settings, folder, tokenizer)
    return folder, train, dev, rows


def _evaluate(tmp_path, folder, train, dev, name, **options):
    settings = FinetuneSettings(
        task=CLASSIFY.name, output_dir=str(tmp_path / name), init_checkpoint=folder,
        do_train=False, strategy="one_device", precision="fp32", max_seq_length=16,
        classifier_dropout=0.0, task_options={"train_file": train, "eval_file": dev,
                                              **options})
    return run(CLASSIFY, settings, verbose=False)


@pytest.mark.parametrize("mode,want", [("window", ["pos", "neg", "pos", "neg"]),
                                       ("truncate", ["neg", "neg", "pos", "neg"])])
def test_the_windows_logits_averaged_per_text_decide_by_the_last_word(tmp_path, capsys, mode,
                                                                      want):
    tokenizer = load_tokenizer(cli.SPM, host=True)
    rows = _texts(tokenizer)
    settings = FinetuneSettings(
        task=CLASSIFY.name, output_dir=str(tmp_path), max_seq_length=16,
        task_options={"train_file": _csv(tmp_path / "train.csv", rows), "long_inputs": mode})
    model = _keyword_model(tokenizer, settings)
    examples = list(CLASSIFY.read_examples(None, "train", CLASSIFY.options(settings)))
    features = CLASSIFY.featurize(examples, tokenizer, settings, "train")
    done = ("are scored in windows (--long_inputs=window)" if mode == "window" else
            "were truncated; --long_inputs=window scores all of each")
    assert capsys.readouterr().out.strip() == (
        f"2 of 4 training texts (50.0%) are longer than 16 tokens and {done}")
    # 30 tokens in windows of 14 every 7 (half a window): 4 windows.
    assert len(features.lengths) == (2 * 4 + 2 if mode == "window" else 4)
    inputs = {k: features.arrays[k] for k in ("token_ids", "segment_ids")}
    inputs["padding_mask"] = (np.arange(16)[None] < features.lengths[:, None]).astype("int32")
    logits = long_inputs.per_text(features, model(inputs)["logits"].numpy())
    assert [model.labels[i] for i in np.argmax(logits, -1)] == want
    assert long_inputs.text_labels(features).tolist() == [1, 0, 1, 0]


@pytest.mark.slow
def test_a_label_decided_by_the_last_word_is_right_with_windows_not_with_truncation(
        tmp_path, capsys):
    folder, train, dev, rows = _keyword_folder(tmp_path)
    capsys.readouterr()
    truncated = _evaluate(tmp_path, folder, train, dev, "truncate")["dev"]
    report = capsys.readouterr().out
    assert ("2 of 4 dev texts (50.0%) are longer than 16 tokens and were truncated; "
            "--long_inputs=window scores all of each") in report
    windowed = _evaluate(tmp_path, folder, train, dev, "window", long_inputs="window",
                         window_stride=7)["dev"]
    assert "2 of 4 dev texts (50.0%) are longer than 16 tokens and are scored in " \
        "windows" in capsys.readouterr().out
    assert windowed["accuracy"] == 1.0 and windowed["examples"] == 4
    assert truncated["accuracy"] == 0.75  # the long "pos" text lost its last word
    assert truncated["examples"] == 4


@pytest.mark.slow
def test_the_export_of_a_windowed_run_averages_windows_in_the_graph(tmp_path):
    folder, train, dev, rows = _keyword_folder(tmp_path)
    texts = [t for t, _ in rows]
    answers = {}
    for mode in ("truncate", "window"):
        _evaluate(tmp_path, folder, train, dev, mode, long_inputs=mode)
        version = export_model(str(tmp_path / mode / "model"), str(tmp_path / f"export-{mode}"))
        serve = tf.saved_model.load(version).signatures["serving_default"]
        answers[mode] = [s.decode() for s in serve(text=tf.constant(texts))["label"].numpy()]
    assert answers["window"] == [label for _, label in rows]
    assert answers["truncate"] == ["neg", "neg", "pos", "neg"]
    assert os.path.isdir(tmp_path / "window" / "model")
