"""The word segmenter of whole-word masking: jieba, as brightmart/albert_zh uses it.

An extra (`albert-tf[zh]`): only Chinese pretraining data needs it. A user
dictionary (`--jieba_dict`, jieba's format: a word a line, optionally its
frequency and part of speech) adds a domain's words.
"""

import logging
import os
import warnings

from albert_tf import extras


def jieba_segmenter(user_dict=None):
    """`text -> list of words`: jieba's precise mode (`lcut`), with `user_dict`."""
    if user_dict and not os.path.isfile(user_dict):
        raise FileNotFoundError(f"--jieba_dict: no such file {user_dict}")
    with warnings.catch_warnings():  # (jieba imports setuptools' deprecated pkg_resources)
        warnings.simplefilter("ignore")
        jieba = extras.load("zh", "whole-word masking of Chinese text")
    jieba.setLogLevel(logging.WARNING)
    segmenter = jieba.Tokenizer()
    if user_dict:
        segmenter.load_userdict(user_dict)
    return segmenter.lcut
