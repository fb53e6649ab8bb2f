"""Pretraining data, text side: the prose sentence splitter, headings, input formats."""

import os

import pytest

from albert_tf.pretraining import documents
from albert_tf.pretraining.sentences import is_heading, split_sentences
from conftest import FIXTURES

LEDGER = os.path.join(FIXTURES, "pretraining", "ledger_gutenberg.txt")


@pytest.mark.parametrize("text, expected", [
    # Titles and initials before names do not end sentences.
    ("Mr. Bennet replied that he had not. Mrs. Long had said so.",
     ["Mr. Bennet replied that he had not.", "Mrs. Long had said so."]),
    ("Dr. J. R. R. Pellow of St. Ives came. He left.",
     ["Dr. J. R. R. Pellow of St. Ives came.", "He left."]),
    ("Messrs. Hale and Capt. Oyelaran met Mme. Roux at the U.S.A. Embassy. Then rain.",
     ["Messrs. Hale and Capt. Oyelaran met Mme. Roux at the U.S.A. Embassy.", "Then rain."]),
    # The pronoun "I" ends sentences.
    ("It was not I. She did it.", ["It was not I.", "She did it."]),
    # Quotes and brackets after the stop stay with the sentence before.
    ('"It is not love," he told her. "It is arithmetic." The keeper laughed.',
     ['"It is not love," he told her.', '"It is arithmetic."', "The keeper laughed."]),
    ("\u201cStop!\u201d He stopped. (It was late.) We slept.",
     ["\u201cStop!\u201d", "He stopped.", "(It was late.)", "We slept."]),
    # "!" or "?" followed by a lowercase word is part of a longer sentence.
    ('"Arithmetic!" said the doctor. "Is it?" asked she. Yes.',
     ['"Arithmetic!" said the doctor.', '"Is it?" asked she.', "Yes."]),
    # Ellipses, runs of marks, italics, digits.
    ("He looked... Nothing. Really?! _Wind from the west._ No ships. 1990 came.",
     ["He looked...", "Nothing.", "Really?!", "_Wind from the west._", "No ships.",
      "1990 came."]),
    # Lowercase after a period (an abbreviation we do not list) does not split.
    ("It cost 5 lbs. of flour and more.", ["It cost 5 lbs. of flour and more."]),
    # Hard-wrapped lines and runs of spaces are joined.
    ("One\r\ntwo  three.\nFour.", ["One two three.", "Four."]),
])
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_split_sentences_keeps_all_text():
    text = ("Mr. Abernethy kept the light for thirty years. He wrote every ship down! Did she? "
            "\"Never,\" said she. Dr. Pellow came on Tuesdays... and left.")
    assert " ".join(split_sentences(text)) == " ".join(text.split())
    assert split_sentences("   ") == []


@pytest.mark.parametrize("line", [
    "CHAPTER II. The Pool of Tears", "Chapter 3", "CHAPTER 1", "ADVENTURE IV. THE BOSCOMBE",
    "II", "IV. The Preparation", "Letter 1", "STAVE ONE", "BOOK THE FIRST"])
def test_headings(line):
    assert is_heading(line)


@pytest.mark.parametrize("line", [
    "Mr. Bennet made no answer.", '"Chapter and verse," said he.', "It was the best of times,",
    "Chapters were long", "Chapter " + "x" * 90, "I shall fire!"])
def test_not_headings(line):
    assert not is_heading(line)


def _documents(paths, input_format):
    return list(documents.read_documents(paths, input_format))


def test_prose_gutenberg_book():
    """Licence skipped, CRLF and hard wraps handled, one document per chapter."""
    docs = _documents([LEDGER], "prose")
    assert len(docs) == 3
    text = " ".join(s for d in docs for s in d)
    assert "\r" not in text and "  " not in text
    assert "eBook" not in text and "Licence" not in text and "CHAPTER" not in text
    assert docs[0][0] == ("Mr. Abernethy kept the lighthouse at St. Brannock's Point for "
                          "thirty years.")
    assert ("Dr. J. R. Pellow, who came from the village on Tuesdays, did not believe him."
            in docs[0])
    assert docs[2][-1] == "It was the only entry in thirty years that had an exclamation mark!"


def test_prose_paragraph_opening_with_a_heading_keyword(tmp_path):
    """A multi-line paragraph that starts like a heading is prose, not a boundary."""
    path = tmp_path / "whales.txt"
    path.write_text("First part.\n\nBOOK I. (FOLIO), CHAPTER I. (SPERM WHALE).--This whale\n"
                    "is large.\n\nChapter 2\n\nSecond part.\n")
    docs = _documents([str(path)], "prose")
    assert len(docs) == 2 and docs[1] == ["Second part."]
    assert " ".join(docs[0]) == ("First part. BOOK I. (FOLIO), CHAPTER I. (SPERM WHALE).--This "
                                 "whale is large.")


def test_prose_without_licence_markers_reads_everything(tmp_path):
    path = tmp_path / "plain.txt"
    path.write_bytes("\ufeffFirst line of a book.\r\nStill the first.\r\n".encode("utf-8"))
    assert _documents([str(path)], "prose") == [["First line of a book.", "Still the first."]]


def test_lines_format(tmp_path):
    """One sentence a line; blank (or blank-looking) lines and files end documents."""
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("s1\ns2\n\n\n  \t\ns3\n")
    b.write_text("s4\r\ns5\r\n")
    assert _documents([str(a), str(b)], "lines") == [["s1", "s2"], ["s3"], ["s4", "s5"]]


def test_not_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"fine\nalso fine\nbad \xff byte\n")
    with pytest.raises(ValueError, match=r"bad\.txt:3: not UTF-8"):
        _documents([str(path)], "lines")


def test_expand_inputs(tmp_path, monkeypatch):
    for name in ("b.txt", "a.txt", "c.md"):
        (tmp_path / name).write_text("x\n")
    (tmp_path / "d.txt").mkdir()
    pattern = str(tmp_path / "*.txt")
    assert documents.expand_inputs([pattern, str(tmp_path / "a.txt")]) == [
        str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    with pytest.raises(ValueError, match=r"no file matches .*nothing\*"):
        documents.expand_inputs([str(tmp_path / "nothing*")])
    with pytest.raises(ValueError, match="no input files"):
        documents.expand_inputs([])
    monkeypatch.setattr(documents.os, "access", lambda path, mode: False)
    with pytest.raises(PermissionError, match=r"a\.txt: cannot read"):
        documents.expand_inputs([pattern])


def test_unknown_format():
    with pytest.raises(ValueError, match="input_format must be one of"):
        _documents([LEDGER], "xml")
