"""Training a SentencePiece model with ALBERT's settings."""

import contextlib
import os
import sys

import sentencepiece as spm

from albert_tf.tokenizer.normalization import preprocess_text
from albert_tf.tokenizer.trainers import check_corpus, corpus_lines

# google-research/albert README, section "SentencePiece", trained the released
# 30k-clean.model with:
#   spm_train --input all.txt --model_prefix=30k-clean --vocab_size=30000 --logtostderr
#     --pad_id=0 --unk_id=1 --eos_id=-1 --bos_id=-1
#     --control_symbols=[CLS],[SEP],[MASK]
#     --user_defined_symbols="(,),\",-,.,–,£,€"
#     --shuffle_input_sentence=true --input_sentence_size=10000000
#     --character_coverage=0.99995 --model_type=unigram
# so <pad>=0, <unk>=1, [CLS]=2, [SEP]=3, [MASK]=4, then the user symbols 5..12.
ALBERT_TRAINER_OPTIONS = {
    "model_type": "unigram",
    "pad_id": 0, "unk_id": 1, "bos_id": -1, "eos_id": -1,
    "control_symbols": ["[CLS]", "[SEP]", "[MASK]"],
    "user_defined_symbols": ["(", ")", '"', "-", ".", "\u2013", "\u00a3", "\u20ac"],
    "shuffle_input_sentence": True,
    "input_sentence_size": 10_000_000,
    "character_coverage": 0.99995,
}


def train_sentencepiece(input_files, vocab_size, output_prefix, lowercase=False, verbose=False,
                        **options):
    """Trains `<output_prefix>.model` and `.vocab` on preprocessed text.

    Args:
        input_files: list of UTF-8 text files, one sentence or paragraph a line.
        vocab_size: pieces in the model, special and user symbols included.
        output_prefix: path prefix of the two output files.
        lowercase: lowercase the text first (an uncased model, like ALBERT's).
        verbose: show SentencePiece's training log on stderr.
        **options: other SentencePiece trainer options (e.g.
            `hard_vocab_limit=False` to let a small corpus end with fewer pieces).

    Returns:
        The path of the `.model` file.

    Raises:
        FileNotFoundError: an input file is missing (named).
        ValueError: a bad `vocab_size`, or SentencePiece rejected the
            training run (its message, e.g. a vocabulary too large for the
            corpus).
    """
    reserved = 2 + len(ALBERT_TRAINER_OPTIONS["control_symbols"]) + len(
        ALBERT_TRAINER_OPTIONS["user_defined_symbols"])
    check_corpus(input_files, vocab_size, reserved, "the special and user symbols")
    parent = os.path.dirname(os.path.abspath(output_prefix))
    os.makedirs(parent, exist_ok=True)
    with contextlib.ExitStack() as stack:
        # SentencePiece silences its log by redirecting the stderr stream's file
        # descriptor, which a notebook's stream (albert_tf.api in Jupyter) does not
        # have: there the log goes to the kernel's own stderr, out of sight.
        log = None if verbose or not _has_descriptor(sys.stderr) else \
            stack.enter_context(open(os.devnull, "w"))
        try:
            spm.SentencePieceTrainer.train(
                # Each non-empty line through ALBERT's `preprocess_text`.
                sentence_iterator=corpus_lines(
                    input_files, lambda line: preprocess_text(line, lowercase)),
                model_prefix=output_prefix, vocab_size=vocab_size, logstream=log,
                **{**ALBERT_TRAINER_OPTIONS, **options})
        except RuntimeError as e:
            raise ValueError(f"SentencePiece training failed: {str(e).strip()}") from None
    return output_prefix + ".model"


def _has_descriptor(stream):
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return False
    return True
