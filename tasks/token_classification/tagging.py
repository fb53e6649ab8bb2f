"""Tagging schemes (IOB1, IOB2, BIOES) and entity-level scores of tag sequences.

A tag is "O" or PREFIX-TYPE. The schemes:

- IOB1 (CoNLL-2003's files): I-X inside a chunk; B-X only where a chunk of
  type X follows another chunk of type X directly.
- IOB2: every chunk starts with B-X, continues with I-X.
- BIOES: B-X I-X* E-X for chunks of two words or more, S-X for one word.

Entities are read in two modes, as seqeval reads them:

- "default", conlleval's rules (lenient): a chunk starts at B-X or S-X, at an
  I-X or E-X after O, after E-/S-, or after a tag of another type, and ends
  before the next chunk start, at O, or after E-X / S-X. Every sequence has an
  entity reading, whatever its scheme.
- "strict": only well-formed chunks of the named scheme count (an IOB2 I-X
  that follows O begins nothing; a BIOES B-X not closed by E-X is dropped).

Converting between schemes reads entities in default mode and writes them in
the target scheme, so a sequence that breaks its scheme is repaired the way
conlleval reads it (`check_scheme` counts such sequences).
"""

import dataclasses

SCHEMES = ("iob1", "iob2", "bioes")
MODES = ("default", "strict")
OUTSIDE = "O"


def split_tag(tag):
    """`(prefix, type)` of a tag: ("O", "") for O; a `ValueError` for a tag
    that is neither O nor PREFIX-TYPE with a one-letter prefix."""
    if tag == OUTSIDE:
        return OUTSIDE, ""
    if len(tag) < 3 or tag[1] != "-" or tag[0] not in "BIES":
        raise ValueError(f"tag {tag!r} is not O, nor B-, I-, E- or S- followed by a type")
    return tag[0], tag[2:]


def detect_scheme(sequences):
    """The scheme of tag sequences: "bioes" if any E- or S- tag, "iob1" if an
    I-X starts a chunk (after O, another type, or at the start), else "iob2"."""
    iob1 = False
    for tags in sequences:
        previous = (OUTSIDE, "")
        for tag in tags:
            prefix, kind = split_tag(tag)
            if prefix in "ES":
                return "bioes"
            if prefix == "I" and (previous[0] == OUTSIDE or previous[1] != kind):
                iob1 = True
            previous = (prefix, kind)
    return "iob1" if iob1 else "iob2"


@dataclasses.dataclass(frozen=True)
class Entity:
    """A chunk of words `[start, end)` of one type."""

    type: str
    start: int
    end: int


def _default_starts(previous, current):
    (p_prefix, p_type), (c_prefix, c_type) = previous, current
    if c_prefix == OUTSIDE:
        return False
    return (c_prefix in "BS" or p_prefix in ("O", "E", "S") or p_type != c_type)


def _default_ends(previous, current):
    (p_prefix, p_type), (c_prefix, c_type) = previous, current
    if p_prefix == OUTSIDE:
        return False
    return (p_prefix in "ES" or c_prefix in "BSO" or p_type != c_type)


def entities_default(tags):
    """The entities of one sequence read by conlleval's (seqeval's default) rules."""
    split = [split_tag(t) for t in tags] + [(OUTSIDE, "")]
    found, start, previous = [], None, (OUTSIDE, "")
    for i, current in enumerate(split):
        if start is not None and _default_ends(previous, current):
            found.append(Entity(previous[1], start, i))
            start = None
        if _default_starts(previous, current):
            start = i
        previous = current
    return found


# Strict mode, per scheme: which prefixes may occur, whether a word starts a
# chunk or continues the one before it, and whether a chunk is complete when
# the next word does not continue it.
_ALLOWED = {"iob1": "IOB", "iob2": "IOB", "bioes": "IOBES"}


def _strict_starts(scheme, previous, current):
    (p_prefix, p_type), (c_prefix, c_type) = previous, current
    if scheme == "iob2":
        return c_prefix == "B"
    if scheme == "bioes":
        return c_prefix in "BS"
    # IOB1: I-X begins a chunk unless it continues one of its type; B-X only
    # directly after a chunk of the same type.
    if c_prefix == "I":
        return p_prefix == "O" or p_prefix == "B" or p_type != c_type
    return c_prefix == "B" and p_prefix in "IB" and p_type == c_type


def _strict_continues(scheme, previous, current):
    (p_prefix, p_type), (c_prefix, c_type) = previous, current
    if p_type != c_type:
        return False
    if scheme == "bioes":
        return p_prefix in "BI" and c_prefix in "IE"
    return p_prefix in "BI" and c_prefix == "I"


def _strict_complete(scheme, last, following):
    (l_prefix, l_type), (f_prefix, f_type) = last, following
    if scheme == "bioes":
        return l_prefix in "ES"
    if scheme == "iob1" and l_prefix == "B" and f_prefix == "B" and f_type != l_type:
        return False  # B-X then B-Y: neither B is well-formed IOB1
    return True


def entities_strict(tags, scheme):
    """The well-formed entities of one sequence in `scheme`; a `ValueError`
    for a prefix the scheme does not have."""
    split = [split_tag(t) for t in tags]
    for tag, (prefix, _) in zip(tags, split):
        if prefix not in _ALLOWED[scheme]:
            raise ValueError(f"tag {tag!r} is not a {scheme.upper()} tag")
    split.append((OUTSIDE, ""))
    found, i, previous = [], 0, (OUTSIDE, "")
    while i < len(split):
        if not _strict_starts(scheme, previous, split[i]):
            previous, i = split[i], i + 1
            continue
        end = i + 1
        while _strict_continues(scheme, split[end - 1], split[end]):
            end += 1
        if _strict_complete(scheme, split[end - 1], split[end]):
            found.append(Entity(split[i][1], i, end))
        previous, i = split[end - 1], end
    return found


def entities(tags, mode="default", scheme=None):
    """The entities of one tag sequence; strict mode needs `scheme`."""
    if mode == "strict":
        return entities_strict(tags, scheme or detect_scheme([tags]))
    return entities_default(tags)


def tags_of(spans, length, scheme):
    """The tag sequence of `length` words with `spans` (`Entity`s, not
    overlapping) written in `scheme`."""
    tags = [OUTSIDE] * length
    previous_end, previous_type = None, None
    for e in sorted(spans, key=lambda e: e.start):
        single = e.end - e.start == 1
        if scheme == "bioes":
            tags[e.start] = f"S-{e.type}" if single else f"B-{e.type}"
            if not single:
                tags[e.end - 1] = f"E-{e.type}"
        else:
            adjacent = previous_end == e.start and previous_type == e.type
            tags[e.start] = f"B-{e.type}" if scheme == "iob2" or adjacent else f"I-{e.type}"
        for i in range(e.start + 1, e.end - (scheme == "bioes" and not single)):
            tags[i] = f"I-{e.type}"
        previous_end, previous_type = e.end, e.type
    return tags


def convert(tags, scheme):
    """`tags` (any scheme, read in default mode) written in `scheme`."""
    return tags_of(entities_default(tags), len(tags), scheme)


def breaks_scheme(tags, scheme):
    """Whether `tags` is not a well-formed sequence of `scheme` (its default
    and strict readings differ, or it has prefixes the scheme lacks)."""
    try:
        return entities_strict(tags, scheme) != entities_default(tags)
    except ValueError:
        return True


def entity_types(tag_set):
    """The sorted entity types of a collection of tags."""
    return sorted({split_tag(t)[1] for t in tag_set} - {""})


def tag_list(types, scheme):
    """Every tag of `types` in `scheme`, "O" first, in a stable order (the
    model's output classes)."""
    prefixes = "BIES" if scheme == "bioes" else "BI"
    return [OUTSIDE] + [f"{p}-{t}" for t in sorted(types) for p in prefixes]
