"""Tagging schemes: detection, validation, conversion, and entity readings equal to seqeval's."""

import random
import warnings

import pytest
from seqeval.metrics.sequence_labeling import get_entities
from seqeval.scheme import IOB1, IOB2, IOBES, Entities

from albert_tf.tasks.token_classification import tagging

SEQEVAL_SCHEMES = {"iob1": IOB1, "iob2": IOB2, "bioes": IOBES}
PREFIXES = {"iob1": "IB", "iob2": "IB", "bioes": "BIES"}


def _random_tags(rng, scheme, length):
    return [rng.choice(["O"] + [f"{p}-{t}" for p in PREFIXES[scheme] for t in ("PER", "LOC")])
            for _ in range(length)]


def _seqeval_default(tags):
    return sorted((kind, start, end + 1) for kind, start, end in get_entities(tags))


def _seqeval_strict(tags, scheme):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = Entities([tags], SEQEVAL_SCHEMES[scheme]).entities[0]
    return sorted((e.tag, e.start, e.end) for e in found)


def _mine(found):
    return sorted((e.type, e.start, e.end) for e in found)


@pytest.mark.parametrize("scheme", tagging.SCHEMES)
def test_entity_readings_equal_seqeval_on_random_sequences(scheme):
    rng = random.Random(hash(scheme) % 1000)
    for _ in range(400):
        tags = _random_tags(rng, scheme, rng.randint(0, 9))
        assert _mine(tagging.entities_default(tags)) == _seqeval_default(tags), tags
        assert _mine(tagging.entities_strict(tags, scheme)) == _seqeval_strict(tags, scheme), tags


def test_detects_each_scheme():
    assert tagging.detect_scheme([["B-PER", "I-PER", "O", "B-LOC"]]) == "iob2"
    assert tagging.detect_scheme([["I-PER", "I-PER", "O", "I-LOC", "B-LOC"]]) == "iob1"
    assert tagging.detect_scheme([["O"], ["B-PER", "E-PER", "S-LOC"]]) == "bioes"
    assert tagging.detect_scheme([["O", "O"]]) == "iob2"


@pytest.mark.parametrize("source", tagging.SCHEMES)
@pytest.mark.parametrize("target", tagging.SCHEMES)
def test_conversion_keeps_the_entities_and_is_well_formed(source, target):
    rng = random.Random(7)
    for _ in range(80):
        tags = _random_tags(rng, source, rng.randint(0, 8))
        converted = tagging.convert(tags, target)
        assert _mine(tagging.entities_default(converted)) == _seqeval_default(tags)
        # Written in the target scheme, the strict reading finds every entity.
        assert _seqeval_strict(converted, target) == _seqeval_default(tags)
        assert not tagging.breaks_scheme(converted, target)


def test_known_conversions():
    iob1 = ["I-PER", "I-PER", "B-PER", "O", "I-LOC"]
    assert tagging.convert(iob1, "iob2") == ["B-PER", "I-PER", "B-PER", "O", "B-LOC"]
    assert tagging.convert(iob1, "bioes") == ["B-PER", "E-PER", "S-PER", "O", "S-LOC"]
    assert tagging.convert(["B-PER", "I-PER", "B-PER", "O", "B-LOC"], "iob1") == iob1


def test_broken_sequences_are_found():
    assert tagging.breaks_scheme(["O", "I-PER"], "iob2")  # I- without B-
    assert tagging.breaks_scheme(["B-PER", "I-PER"], "bioes")  # not closed by E-
    assert tagging.breaks_scheme(["B-PER", "S-LOC"], "iob2")  # a prefix IOB2 lacks
    assert not tagging.breaks_scheme(["B-PER", "I-PER", "O"], "iob2")
    assert not tagging.breaks_scheme(["O", "I-PER", "B-PER"], "iob1")


def test_tag_validation_names_the_tag():
    with pytest.raises(ValueError, match="'PER'"):
        tagging.split_tag("PER")
    with pytest.raises(ValueError, match="'X-PER'"):
        tagging.split_tag("X-PER")


def test_tag_list_is_stable():
    assert tagging.tag_list(["PER", "LOC"], "iob2") == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    assert tagging.tag_list(["LOC"], "bioes") == ["O", "B-LOC", "I-LOC", "E-LOC", "S-LOC"]
