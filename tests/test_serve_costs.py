"""What the server counts before it runs a request (`albert_tf.serving.model.row_costs`):
the sequences of each row, from its list inputs and from the windows its long texts
become, never fewer than the export's own windowing makes; and how a request is cut
into parts of at most `--max_batch_size` sequences (`parts`)."""

from types import SimpleNamespace

import numpy as np
import pytest

from albert_tf.export.classification import ClassifierServing
from albert_tf.export.squad import SquadServing
from albert_tf.export.token_classification import TokenClassifierServing
from albert_tf.serving.model import parts, row_costs
from albert_tf.steps.text_limit import WINDOWED_LENGTHS

WORDS = "the quick brown fox jumps over a lazy dog near Zürich, 1,250 times; café «ﬁn» 東京 "


def _texts(count, seed=0):
    rng = np.random.default_rng(seed)
    words = WORDS.split()
    return [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(0, 700, count)]


def _strings(texts):
    return np.array([t.encode() for t in texts], object)


def test_a_row_costs_its_list_items():
    arrays = {"question": _strings(["q"] * 3), "choices": np.array([[b"a"] * 7] * 3, object)}
    assert row_costs(arrays).tolist() == [7, 7, 7]
    assert row_costs({"text_a": _strings(["a"] * 5), "text_b": _strings(["b"] * 5)}).sum() == 5
    assert row_costs({"token_ids": np.zeros((4, 9), np.int32)}).tolist() == [1, 1, 1, 1]


def test_parts_hold_at_most_the_batch_and_keep_the_rows_in_order():
    assert parts(np.array([1] * 23), 10) == [(0, 10), (10, 20), (20, 23)]
    assert parts(np.array([7, 7, 7]), 10) == [(0, 1), (1, 2), (2, 3)]
    assert parts(np.array([3, 30, 2, 2]), 10) == [(0, 1), (1, 2), (2, 4)]
    assert parts(np.array([4]), 1) == [(0, 1)]


@pytest.mark.parametrize("stride", [0, 40, 200])
def test_windowed_classification_is_counted_at_least_the_windows_it_makes(spm_tokenizer,
                                                                          stride):
    from albert_tf.steps.windows import WindowPacker

    length = 128
    module = SimpleNamespace(windows=SimpleNamespace(stride=stride), pair=False,
                             max_seq_length=length, windowed_tokens=WINDOWED_LENGTHS * length)
    windows = ClassifierServing.text_windows(module)
    texts = _texts(40)
    ids = spm_tokenizer(texts)
    packer = WindowPacker(length, stride, spm_tokenizer.cls_id, spm_tokenizer.sep_id,
                          spm_tokenizer.pad_id)
    made = np.bincount(np.asarray(packer(ids)["text"]), minlength=len(texts))
    counted = row_costs({"text": _strings(texts)}, windows)
    assert (counted >= made).all() and made.max() > 3
    assert row_costs({"text": _strings(["a short text", ""])}, windows).tolist() == [1, 1]


def test_squad_is_counted_at_least_the_windows_of_its_contexts(spm_tokenizer):
    from albert_tf.steps import squad_windows

    module = SimpleNamespace(max_seq_length=128, max_query_length=24, doc_stride=48,
                             windowed_tokens=WINDOWED_LENGTHS * 128)
    windows = SquadServing.text_windows(module)
    contexts = _texts(40, seed=1)
    questions = ["where does the fox jump over the dog?"] * len(contexts)
    num_query = np.minimum(spm_tokenizer(questions).row_lengths().numpy(), 24)
    num_context = spm_tokenizer(contexts).row_lengths().numpy()
    made = squad_windows.count_windows(num_query, num_context, 128, 48).numpy()
    counted = row_costs({"question": _strings(questions), "context": _strings(contexts)},
                        windows)
    assert (counted >= made).all() and made.max() > 3


def test_token_classification_counts_consecutive_windows_up_to_the_cut():
    windows = TokenClassifierServing.text_windows(
        SimpleNamespace(max_seq_length=66, windowed_tokens=WINDOWED_LENGTHS * 66))
    counted = row_costs({"text": _strings(["x" * 63, "x" * 64, "x" * 65, "x" * 100_000])},
                        windows)
    # n characters count as n + 1 tokens, 64 a window; at most 8 x 66 = 528 (9 windows).
    assert counted.tolist() == [1, 2, 2, 9]
