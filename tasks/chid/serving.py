"""Serving CHID from raw text: a passage with its blanks and the candidates -> an idiom a blank.

`serving_default` takes `passage`, string `(batch_size,)`, a text with blanks
written `#idiom#` or `#idiomNNNNNN#`, and `candidates`, string
`(batch_size, num_candidates)`, "" for none. Each (blank, candidate) is one
row as fine-tuning packed it (`albert_tf.steps.cloze`, through
`tasks.chid.features`' constants), scored by the multiple-choice head, and a
passage's blanks are answered together (`albert_tf.steps.cloze_decode`: the
global assignment, or each blank alone, as the run's `--chid_decoding`).
Outputs, blanks in the order they are written:

- `blank` string `(batch_size, num_blanks)`: each blank as written ("" past a
  passage's own blanks);
- `choice_index` int32 `(batch_size, num_blanks)`: its candidate, -1 past the
  passage's blanks or with no candidate;
- `idiom` string `(batch_size, num_blanks)`: that candidate ("" when none);
- `probabilities` float32 `(batch_size, num_blanks, num_candidates)`: each
  blank's softmax over the candidates (0 at "" and past its blanks);
- `num_blanks` int32 `(batch_size,)`.

`encoded` (and TFLite) score packed rows one by one, as the multiple-choice
exports' do.
"""

import tensorflow as tf

from albert_tf.export.multiple_choice import ChoiceScoring
from albert_tf.steps.cloze import blank_texts, join_blanks
from albert_tf.steps.cloze_decode import answer_blanks
from albert_tf.tasks.chid.data import BLANK
from albert_tf.tasks.chid.features import REPLACEMENTS, cloze_packer

INPUTS = ("passage", "candidates")
NEG_INF = float("-inf")


class ChidServing(ChoiceScoring):
    """Raw-text signatures of a CHID `AlbertMultipleChoice`.

    Args:
        model: the fine-tuned `AlbertMultipleChoice` (float32).
        tokenizer: its in-graph tokenizer.
        max_seq_length: the fine-tuning run's.
        greedy: the global assignment (else each blank's own best).
    """

    # No web form (`--web` says so): the browser would need the blanks' texts, their
    # windows and the global assignment in JavaScript, a second form of
    # albert_tf.steps.cloze and cloze_decode; serve the SavedModel instead.
    web_decoder = None

    def __init__(self, model, tokenizer, max_seq_length, greedy):
        super().__init__(model, tokenizer, max_seq_length, name="albert_chid_serving")
        self.packer = cloze_packer(tokenizer, max_seq_length)
        self.greedy = greedy
        self.define_signatures(self._serve, INPUTS, ranks=(1, 2))

    def blank_rows(self, passage, longest):
        """`(windows, blanks, passage_of)`: each blank's window (ragged, one row a
        blank of the batch), the blanks as written (ragged `(batch, blanks)`) and
        the passage of each blank `(blanks in all,)`."""
        texts, blanks = blank_texts(passage, BLANK, REPLACEMENTS)
        ids, positions = join_blanks(texts.with_flat_values(self.tokenizer(texts.flat_values)))
        passage_of = tf.cast(positions.value_rowids(), tf.int32)
        windows = self.packer.windows(tf.gather(ids, passage_of), positions.flat_values,
                                      tf.gather(longest, passage_of))
        return windows, blanks, passage_of

    def _serve(self, passage, candidates):
        columns = tf.shape(candidates)[1]
        # No column at all: one empty candidate, so that the reductions have a
        # column (its answer is "none"); the outputs are cut back to `columns`.
        candidates = tf.pad(candidates, [[0, 0], [0, tf.maximum(1 - columns, 0)]],
                            constant_values="")
        batch, width = tf.shape(candidates)[0], tf.shape(candidates)[1]
        present = tf.strings.length(candidates) > 0  # (batch, candidates)
        kept = self.packer.candidates(self.tokenizer(tf.reshape(candidates, [-1])))
        lengths = tf.reshape(tf.cast(kept.row_lengths(), tf.int32), [batch, width])
        longest = tf.reduce_max(tf.where(present, lengths, 0), axis=1)
        windows, blanks, passage_of = self.blank_rows(passage, longest)
        # Row b * width + c is candidate c of blank b.
        rows = tf.shape(passage_of)[0]
        candidate_rows = tf.reshape(passage_of[:, None] * width + tf.range(width)[None, :], [-1])
        packed = self.packer(tf.gather(kept, candidate_rows),
                             tf.gather(windows, tf.repeat(tf.range(rows), width)))
        scores = self.choice_scores(packed, tf.gather(present, passage_of))  # (rows, width)
        num_blanks = tf.cast(blanks.row_lengths(), tf.int32)
        grouped = tf.RaggedTensor.from_value_rowids(
            scores, tf.cast(passage_of, tf.int64), nrows=tf.cast(batch, tf.int64))
        most = tf.reduce_max(tf.concat([[0], num_blanks], 0))
        grouped = grouped.to_tensor(NEG_INF, shape=[batch, most, width])
        choice = answer_blanks(grouped, self.greedy)  # (batch, most)
        answered = choice >= 0
        picked = tf.gather(candidates, tf.maximum(choice, 0), batch_dims=1)
        scored = tf.reduce_any(grouped > NEG_INF, axis=2, keepdims=True)
        probabilities = tf.where(scored, tf.nn.softmax(grouped, axis=-1), 0.0)
        return {"blank": blanks.to_tensor("", shape=[batch, most]),
                "choice_index": choice, "idiom": tf.where(answered, picked, ""),
                "probabilities": probabilities[:, :, :columns], "num_blanks": num_blanks}
