"""Training a WordPiece vocabulary (for pretraining in a new language).

The words are BERT's own (`wordpiece.host.basic_tokenize`, the tokenizer the
vocabulary will be used with); the Hugging Face `tokenizers` package learns
the pieces from them (its `WordPieceTrainer`: BPE merges, "##" for pieces
inside a word), with nothing of its own normalization or pre-tokenization
but a split at the spaces between those words.
"""

import json
import os

from albert_tf.tokenizer.base import TOKENIZER_CONFIG
from albert_tf.tokenizer.trainers import check_corpus, corpus_lines
from albert_tf.tokenizer.wordpiece.host import basic_tokenize
from albert_tf.tokenizer.wordpiece.vocab import (CONTINUATION, MAX_WORD_CHARS, SPECIAL_TOKENS,
                                                 WordPieceVocab)

# BERT's special tokens first: [PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3, [MASK]=4.
SPECIAL_ORDER = ("pad", "unk", "cls", "sep", "mask")
VOCAB_FILE = "vocab.txt"


def train_wordpiece(input_files, vocab_size, output_dir, lowercase=False, verbose=False,
                    **options):
    """Trains `<output_dir>/vocab.txt` and writes `<output_dir>/tokenizer_config.json`.

    Args:
        input_files: list of UTF-8 text files, one sentence or paragraph a line.
        vocab_size: tokens in the vocabulary at most, the 5 special ones
            included (a small corpus may give fewer; one with more distinct
            characters than that is refused).
        output_dir: the folder to write (created if needed); `load_tokenizer`
            reads it back with its casing.
        lowercase: an uncased vocabulary (BERT's `do_lower_case`: lowercase
            and strip accents), as Chinese BERT/ALBERT's.
        verbose: show the trainer's progress.
        **options: other `tokenizers.trainers.WordPieceTrainer` options
            (e.g. `min_frequency=2`, `limit_alphabet=1000`).

    Returns:
        The path of `vocab.txt`.

    Raises:
        FileNotFoundError: an input file is missing (named).
        ValueError: a bad `vocab_size`, too small for the corpus' characters,
            or no words in the input.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    special = [SPECIAL_TOKENS[name] for name in SPECIAL_ORDER]
    check_corpus(input_files, vocab_size, len(special), "the special tokens")
    tokenizer = Tokenizer(models.WordPiece(unk_token=SPECIAL_TOKENS["unk"],
                                           max_input_chars_per_word=MAX_WORD_CHARS))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()  # the spaces between words
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=special,
                                        continuing_subword_prefix=CONTINUATION,
                                        show_progress=verbose, **options)
    # Each non-empty line as its BERT words joined by spaces.
    lines = corpus_lines(input_files, lambda line: " ".join(basic_tokenize(line, lowercase)))
    tokenizer.train_from_iterator(lines, trainer=trainer)
    ids = tokenizer.get_vocab()
    if len(ids) <= len(special):
        raise ValueError(f"no words in {', '.join(input_files)}: nothing to learn")
    if len(ids) > vocab_size:  # the trainer keeps every character it saw
        raise ValueError(f"the corpus needs {len(ids)} tokens for its characters alone, more "
                         f"than vocab_size={vocab_size}: raise vocab_size or limit the "
                         f"alphabet (limit_alphabet)")
    tokens = sorted(ids, key=ids.get)
    assert tokens[:len(special)] == special, tokens[:len(special)]
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, VOCAB_FILE)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(WordPieceVocab(tokens).text())
    # Hugging Face's `do_lower_case` records the casing, which `load_tokenizer`
    # reads: the vocabulary of a caseless script cannot show it.
    with open(os.path.join(output_dir, TOKENIZER_CONFIG), "w", encoding="utf-8") as f:
        json.dump({"do_lower_case": bool(lowercase)}, f)
    return path
