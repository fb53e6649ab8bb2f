"""`LinearChainCRF` against a brute-force enumeration of every tag path."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.models.crf import LinearChainCRF

NUM_TAGS = 3
LENGTHS = np.array([5, 3, 1, 0, 4])  # batch 5, time 5: full, partial, one step, empty


def _weights(crf):
    return [v.numpy().astype(np.float64) for v in
            (crf.transitions, crf.start_scores, crf.end_scores)]


def _path_score(crf, potentials, path):
    transitions, start, end = _weights(crf)
    score = start[path[0]] + end[path[-1]] + sum(potentials[t, y] for t, y in enumerate(path))
    return score + sum(transitions[a, b] for a, b in zip(path, path[1:]))


def _all_paths(crf, potentials, length):
    paths = list(itertools.product(range(NUM_TAGS), repeat=length))
    return paths, np.array([_path_score(crf, potentials, p) for p in paths])


@pytest.fixture
def crf_and_potentials():
    crf = LinearChainCRF(NUM_TAGS)
    crf.transitions.assign(np.random.default_rng(1).normal(size=(NUM_TAGS, NUM_TAGS)))
    potentials = np.random.default_rng(2).normal(size=(5, 5, NUM_TAGS)).astype(np.float32)
    return crf, potentials


def test_log_partition_and_viterbi_equal_brute_force(crf_and_potentials):
    crf, potentials = crf_and_potentials
    log_z = crf.log_partition(potentials, LENGTHS).numpy()
    decoded = crf.decode(potentials, LENGTHS).numpy()
    for b, n in enumerate(LENGTHS):
        if n == 0:
            assert log_z[b] == 0 and not decoded[b].any()
            continue
        paths, scores = _all_paths(crf, potentials[b], n)
        assert log_z[b] == pytest.approx(np.logaddexp.reduce(scores), abs=1e-5)
        assert tuple(decoded[b, :n]) == paths[int(np.argmax(scores))]
        assert not decoded[b, n:].any()  # padding decodes to 0


def test_log_likelihood_of_every_path_sums_to_one(crf_and_potentials):
    crf, potentials = crf_and_potentials
    n = 3
    paths = np.array(list(itertools.product(range(NUM_TAGS), repeat=n)))
    tags = np.zeros((len(paths), 5), np.int32)
    tags[:, :n] = paths
    batch = np.repeat(potentials[1:2], len(paths), axis=0)
    likelihood = crf.log_likelihood(batch, tags, np.full(len(paths), n)).numpy()
    assert np.exp(likelihood).sum() == pytest.approx(1.0, abs=1e-5)
    expected = [_path_score(crf, potentials[1], p) for p in paths[:4]]
    got = crf.sequence_score(batch[:4], tags[:4], np.full(4, n)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_gradients_reach_every_crf_weight(crf_and_potentials):
    crf, potentials = crf_and_potentials
    tags = np.random.default_rng(3).integers(0, NUM_TAGS, (5, 5))
    with tf.GradientTape() as tape:
        loss = -tf.reduce_sum(crf.log_likelihood(potentials, tags, LENGTHS))
    grads = tape.gradient(loss, crf.trainable_weights)
    assert len(grads) == 3 and all(np.abs(g.numpy()).sum() > 0 for g in grads)


def test_decode_in_a_graph_of_unknown_sizes_and_an_empty_batch():
    crf = LinearChainCRF(NUM_TAGS)
    decode = tf.function(crf.decode, input_signature=[
        tf.TensorSpec([None, None, NUM_TAGS], tf.float32), tf.TensorSpec([None], tf.int32)])
    assert decode(tf.zeros([2, 0, NUM_TAGS]), tf.constant([0, 0])).shape == (2, 0)
    assert decode(tf.ones([1, 4, NUM_TAGS]), tf.constant([2])).shape == (1, 4)
