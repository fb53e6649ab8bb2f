"""The steps of the input and output pipelines that training and serving share.

Each step is one Keras layer or TensorFlow function: a fine-tuning run maps it
over a split's ids eagerly (`albert_tf.data.mapped`), and the exported graph
runs it inside `serving_default`, so a served answer is built exactly as the
training and evaluation inputs were.

- `packing`: `[CLS] a [SEP] (b [SEP])` (`SegmentPacker`) and the padded length;
- `windows`: overlapping windows of long texts (`WindowPacker`, `window_mean`,
  `window_plan`) and consecutive windows (token classification);
- `text_limit`: raw text cut before tokenization to what can reach the model;
- `squad_windows`, `squad_decode`: SQuAD's document windows and answer decoding;
- `words`: the words of raw text and the entities of word tags;
- `choices`: multiple choice's question-choice texts and packing;
- `cloze`, `cloze_decode`: a cloze passage's blanks, each blank's window and rows
  (CHID), and the answers of a passage group's blanks.

Names are imported on first use, so that light tools start without TensorFlow.
"""

from albert_tf.lazy import lazy_exports

_EXPORTS = {
    "SegmentPacker": "albert_tf.steps.packing",
    "WindowPacker": "albert_tf.steps.windows",
    "window_mean": "albert_tf.steps.windows",
    "ChoicePacker": "albert_tf.steps.choices",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
