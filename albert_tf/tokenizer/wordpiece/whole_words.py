"""Chinese whole words on WordPiece tokens, as brightmart/albert_zh marks them.

The Chinese ALBERTs were pretrained with whole-word masking: brightmart's
`create_pretraining_data.py` (`get_new_segment`) segments each tokenized
sentence with a word segmenter (jieba) and marks the characters of a word
after its first, so that masking takes the word whole. Its rule, on the
sentence's pieces: the words are those the segmenter finds in the pieces
joined; from each piece holding a CJK ideograph (U+4E00..U+9FA5), the
longest run of at most `MAX_WORD` pieces that is one of those words is
taken, its pieces after the first marked; a piece without a CJK ideograph
(English words, which WordPiece's "##" already joins) is left as it is.
"""

import re

CJK = re.compile("[\u4e00-\u9fa5]")
MAX_WORD = 3  # brightmart's longest whole word, in pieces


def word_marks(pieces, words):
    """bool list, one per piece: whether it continues a word of `words` (the
    segmenter's words of `"".join(pieces)`)."""
    known = set(words)
    marks, i = [False] * len(pieces), 0
    while i < len(pieces):
        length = 1
        if CJK.search(pieces[i]):
            length = next((n for n in range(MAX_WORD, 0, -1) if i + n <= len(pieces)
                           and "".join(pieces[i:i + n]) in known), 1)
            marks[i + 1:i + length] = [True] * (length - 1)
        i += length
    return marks


def is_chinese(pieces, minimum=1000):
    """Whether a vocabulary's pieces hold at least `minimum` single CJK ideographs
    (Chinese BERT's vocab.txt has some 7,000)."""
    return sum(1 for piece in pieces if len(piece) == 1 and CJK.match(piece)) >= minimum
