"""`LinearChainCRF`: a linear-chain conditional random field over tag sequences.

The score of tags `y_0 .. y_{n-1}` given potentials `P` (batch, time, tags) is

    start[y_0] + sum_t P[t, y_t] + sum_{t>0} transitions[y_{t-1}, y_t] + end[y_{n-1}]

(Lafferty et al. 2001; the start/end scores as in Lample et al. 2016's NER
tagger). `log_likelihood` is that score minus the log-partition function
computed by the forward algorithm; `decode` is Viterbi. Sequences are left
aligned: row `b` has `lengths[b]` real steps, the rest is padding and ignored;
a sequence of length 0 has likelihood 1 and decodes to nothing.
"""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="albert_tf")
class LinearChainCRF(keras.layers.Layer):
    """Transition, start and end scores of `num_tags` tags, learned.

    >>> crf = LinearChainCRF(3)
    >>> tags = crf.decode(tf.zeros([2, 5, 3]), tf.constant([5, 2]))
    >>> tuple(tags.shape), tags.dtype.name
    ((2, 5), 'int32')
    """

    def __init__(self, num_tags, **kwargs):
        super().__init__(**kwargs)
        self.num_tags = num_tags
        # Small random scores: all-equal transitions would tie every path.
        init = keras.initializers.RandomUniform(-0.1, 0.1)
        self.transitions = self.add_weight(shape=(num_tags, num_tags), initializer=init,
                                           name="transitions")
        self.start_scores = self.add_weight(shape=(num_tags,), initializer=init,
                                            name="start_scores")
        self.end_scores = self.add_weight(shape=(num_tags,), initializer=init,
                                          name="end_scores")
        # Its weights depend on num_tags alone, made here: built (else Keras warns
        # that the model holding it was marked built with unbuilt state).
        self.built = True

    @staticmethod
    def _at_least_two_steps(potentials):
        """Potentials padded to two steps if they have fewer: the scans below
        start from the first step and run over the others, and a scan over no
        elements of an unknown batch size fails in a graph. Padding steps lie
        past every sequence's length, so they change nothing."""
        potentials = tf.cast(potentials, tf.float32)
        missing = tf.maximum(2 - tf.shape(potentials)[1], 0)
        return tf.pad(potentials, [[0, 0], [0, missing], [0, 0]])

    def _parts(self):
        return (tf.cast(self.transitions, tf.float32), tf.cast(self.start_scores, tf.float32),
                tf.cast(self.end_scores, tf.float32))

    def sequence_score(self, potentials, tags, lengths):
        """The unnormalized score of `tags` (batch, time) int, (batch,) float32."""
        transitions, start, end = self._parts()
        potentials = tf.cast(potentials, tf.float32)
        tags = tf.cast(tags, tf.int32)
        lengths = tf.cast(lengths, tf.int32)
        mask = tf.sequence_mask(lengths, tf.shape(tags)[1], dtype=tf.float32)  # (batch, time)
        safe = tags * tf.cast(mask, tf.int32)
        emitted = tf.reduce_sum(tf.gather(potentials, safe, batch_dims=2) * mask, axis=1)
        pairs = tf.gather_nd(transitions, tf.stack([safe[:, :-1], safe[:, 1:]], -1))
        moved = tf.reduce_sum(pairs * mask[:, 1:], axis=1)
        last = tf.gather(safe, tf.maximum(lengths - 1, 0), batch_dims=1)
        has = tf.cast(lengths > 0, tf.float32)
        return emitted + moved + (tf.gather(start, safe[:, 0]) + tf.gather(end, last)) * has

    def log_partition(self, potentials, lengths):
        """log of the sum of exp(score) over every tag path, (batch,) float32."""
        transitions, start, end = self._parts()
        potentials = self._at_least_two_steps(potentials)
        lengths = tf.cast(lengths, tf.int32)
        steps = tf.transpose(potentials, [1, 0, 2])  # (time, batch, tags)
        alpha0 = start[None, :] + steps[0]

        def step(alpha, inputs):
            t, emission = inputs
            # (batch, from, 1) + (from, to) -> sum over `from`: (batch, to)
            moved = tf.reduce_logsumexp(alpha[:, :, None] + transitions[None], axis=1)
            live = (t < lengths)[:, None]
            return tf.where(live, moved + emission, alpha)

        times = tf.range(1, tf.shape(steps)[0])
        alpha = tf.foldl(step, (times, steps[1:]), initializer=alpha0)
        total = tf.reduce_logsumexp(alpha + end[None, :], axis=1)
        return tf.where(lengths > 0, total, tf.zeros_like(total))

    def log_likelihood(self, potentials, tags, lengths):
        """log p(tags | potentials), (batch,) float32."""
        return (self.sequence_score(potentials, tags, lengths)
                - self.log_partition(potentials, lengths))

    def decode(self, potentials, lengths):
        """The highest-scoring tag paths (Viterbi), int32 (batch, time); 0 on padding."""
        transitions, start, end = self._parts()
        time = tf.shape(potentials)[1]
        potentials = self._at_least_two_steps(potentials)
        lengths = tf.cast(lengths, tf.int32)
        steps = tf.transpose(potentials, [1, 0, 2])  # (time, batch, tags)
        num_tags = tf.shape(transitions)[0]
        identity = tf.broadcast_to(tf.range(num_tags)[None, :], tf.shape(steps[0]))

        def step(carry, inputs):
            delta, _ = carry
            t, emission = inputs
            candidates = delta[:, :, None] + transitions[None]  # (batch, from, to)
            live = (t < lengths)[:, None]
            best_from = tf.argmax(candidates, axis=1, output_type=tf.int32)
            new_delta = tf.reduce_max(candidates, axis=1) + emission
            # Past the end the path stays put, so that backtracking passes through.
            return (tf.where(live, new_delta, delta), tf.where(live, best_from, identity))

        times = tf.range(1, tf.shape(steps)[0])
        deltas, pointers = tf.scan(step, (times, steps[1:]),
                                   initializer=(start[None, :] + steps[0], identity))
        final = tf.concat([(start[None, :] + steps[0])[None], deltas], 0)[-1]
        best_last = tf.argmax(final + end[None, :], axis=1, output_type=tf.int32)

        def back(tag, pointer):
            return tf.gather(pointer, tag, batch_dims=1)

        earlier = tf.scan(back, pointers, initializer=best_last, reverse=True)  # (time-1, batch)
        path = tf.transpose(tf.concat([earlier, best_last[None]], 0))  # (batch, time)
        mask = tf.sequence_mask(lengths, tf.shape(potentials)[1])
        return tf.where(mask, path, tf.zeros_like(path))[:, :time]

    def get_config(self):
        config = super().get_config()
        config["num_tags"] = self.num_tags
        return config
