"""`--task=token_classification`: a tag for every word (NER, POS tagging, chunking).

Files (`token_classification.data`): CoNLL columns or CLUENER2020-style JSON lines,
named by `--train_file`, `--eval_file`, `--predict_file`.

Tags. The training file's scheme (IOB1, IOB2 or BIOES) is detected; the
model predicts in `--tag_scheme` (auto: IOB2, or BIOES for a BIOES file),
every file converted to it. The tag set is read from the training file
("O", then each type's tags, types sorted) and recorded with the model as
the `entity_tags` option. A sequence that breaks its file's scheme is
counted and reported (count, first line); with `--scheme_errors=repair`
(the default) it is read as conlleval reads it, with `error` the run stops.
A type in the eval file that training never saw stops the run, naming it
and its line.

Metrics (`token_classification.ner_eval`, equal to seqeval and conlleval): entity-level
precision / recall / F1, micro and per type, in default and strict mode, and
word accuracy. `--do_eval` also writes `<split>_gold.conll` and
`<split>_predicted.conll` (a word and its tag per line) for
`python -m albert_tf.tasks.token_classification.ner_eval`; `--do_predict` writes `test_predictions.jsonl`:
each text's entities (type, code point span, text), words and tags.
"""

import collections
import json
import logging
import os

import numpy as np

from albert_tf.io_utils import atomic_file
from albert_tf.models import AlbertTokenClassifier
from albert_tf.tasks import declarations, register, user_files
from albert_tf.tasks.base import Task
from albert_tf.tasks.losses import head_loss
from albert_tf.tasks.token_classification import data as token_data
from albert_tf.tasks.token_classification import features as token_features
from albert_tf.tasks.token_classification import ner_eval, tagging
from albert_tf.tasks.token_classification.options import TokenOptions
from albert_tf.tasks.user_files import split_file

log = logging.getLogger(__name__)

# What each entity score counts, printed beside them (`results.print_results`).
METRIC_NOTES = {
    "f1": "entity F1 as CoNLL's conlleval counts (an I- tag after O or another type "
          "opens an entity; precision, recall, f1_TYPE alike)",
    "strict_f1": "entity F1 of spans well-formed in the tagging scheme only (seqeval's "
                 "strict mode: in IOB2 an entity opens with B-, a stray I- is none)",
}


def _file_tags(examples):
    """The types of a file's examples, each with the first place it occurs."""
    first = {}
    for example in examples:
        kinds = ([tagging.split_tag(t)[1] for t in example.tags or ()] if example.words
                 is not None else [e.type for e in example.entities or ()])
        for kind in kinds:
            if kind:
                first.setdefault(kind, example.where)
    return first


class TokenClassificationTask(Task):
    pipeline_tag = "token-classification"
    primary_metric = "f1"  # entity-level micro F1 (conlleval's)

    def kfold_files(self, options, data_dir, k, folder):
        """Folds of the training sentences (CoNLL) or rows (JSON lines), by a hash of each."""
        options = options or TokenOptions()
        user_files.check_kfold_options(options, self.name)
        path = split_file(options, data_dir, "train", self.name)
        read = (lambda: user_files.row_records(path, "jsonl")) if \
            token_data.is_json(path, options.format) else (lambda: user_files.block_records(path))
        return user_files.write_folds(path, k, folder, read)

    def read_examples(self, data_dir, split, options=None):
        options = options or TokenOptions()
        path = split_file(options, data_dir, split, self.name)
        labelled = split != "test"
        examples = token_data.read_file(path, options.format, labelled)
        if labelled:
            self._check_scheme(path, examples, options)
        if split == "train":
            self._remember(path, self._tags_of(examples, options))
        elif labelled:
            self._check_types(path, examples, self.tags(options, data_dir))
        return examples

    @staticmethod
    def _key(path):
        stat = os.stat(path)
        return "tags", os.path.abspath(path), stat.st_size, stat.st_mtime_ns

    def _remember(self, path, tags):
        # A bound task keeps a training file's tags for its run (per file version).
        if self.run_cache is not None:
            self.run_cache[self._key(path)] = tags

    def _check_scheme(self, path, examples, options):
        sequences = [list(e.tags) for e in examples if e.tags]
        if not sequences:
            return
        scheme = tagging.detect_scheme(sequences)
        broken = [e for e in examples if e.tags and tagging.breaks_scheme(list(e.tags), scheme)]
        if not broken:
            return
        message = (f"{path}: {len(broken)} tag sequence(s) break the file's scheme "
                   f"{scheme.upper()} (the first at {broken[0].where})")
        if options.scheme_errors == "error":
            raise ValueError(message)
        log.warning("%s; read as conlleval reads them", message)

    @staticmethod
    def _tags_of(examples, options):
        sequences = [list(e.tags) for e in examples if e.tags]
        scheme = options.tag_scheme
        if scheme == "auto":
            scheme = "bioes" if sequences and tagging.detect_scheme(sequences) == "bioes" \
                else "iob2"
        return tagging.tag_list(_file_tags(examples), scheme)

    def tags(self, options, data_dir=""):
        """The model's tag list: `entity_tags`, else the training file's."""
        if options.entity_tags:
            return options.entity_tags.split(",")
        path = split_file(options, data_dir, "train", self.name)
        if self.run_cache is not None and self._key(path) in self.run_cache:
            return self.run_cache[self._key(path)]
        examples = token_data.read_file(path, options.format, True)
        self._check_scheme(path, examples, options)
        tags = self._tags_of(examples, options)
        self._remember(path, tags)
        return tags

    def _check_types(self, path, examples, tags):
        known = set(tagging.entity_types(tags))
        for kind, where in _file_tags(examples).items():
            if kind not in known:
                raise ValueError(f"{where}: type {kind!r} never occurs in training (its "
                                 f"types: {', '.join(sorted(known)) or 'none'})")

    def featurize(self, examples, tokenizer, settings, split):
        tags = self.tags(self.options(settings), settings.data_dir)
        return token_features.featurize(examples, tokenizer, settings.max_seq_length, tags,
                                        labelled=split != "test")

    def build_model(self, backbone, settings, head=None):
        options = self.options(settings)
        tags = self.tags(options, settings.data_dir)
        if settings.task_options and not options.entity_tags:
            # Recorded in the settings the model folder stores, so that a
            # model loaded without its training file knows its tags.
            settings.task_options["entity_tags"] = ",".join(tags)
        return AlbertTokenClassifier(backbone, len(tags), dropout=settings.classifier_dropout,
                                     crf=options.crf, head_loss=head_loss(options))

    def predicted_tags(self, scoring):
        """`(encoded examples, predicted word tags)` of the split scored."""
        split = scoring.split
        tags = self.tags(self.task_options, self.settings.data_dir)
        mask = split.features.arrays["word_index"] >= 0
        logits = split.outputs["logits"]
        # In slices: a CRF's Viterbi holds (rows, words, tags, tags) scores.
        ids = np.zeros(mask.shape, np.int32)
        for i in range(0, len(split.features), 256):
            ids[i:i + 256] = scoring.decode(logits[i:i + 256], mask[i:i + 256])
        encoded = token_features.encode_all(split.examples, scoring.tokenizer, self._scheme())
        return encoded, token_features.word_tags(split.features, ids,
                                                 [len(e.spans) for e in encoded], tags)

    def evaluate(self, scoring):
        encoded, predicted = self.predicted_tags(scoring)
        gold = [e.tags for e in encoded]
        scores = ner_eval.score(gold, predicted)
        strict = ner_eval.score(gold, predicted, "strict", self._scheme())
        self._write_conll(scoring, encoded, gold, predicted)
        metrics = {"precision": scores["precision"], "recall": scores["recall"],
                   "f1": scores["f1"], "accuracy": scores["accuracy"],
                   "strict_f1": strict["f1"], "examples": len(gold), "entities": scores["gold"],
                   "predicted_entities": scores["found"], "metric_notes": METRIC_NOTES}
        metrics.update({f"f1_{k}": v["f1"] for k, v in scores["per_type"].items()})
        metrics.update(tag_baseline(gold))
        return metrics

    def collapse(self, scoring, results):
        """No entity found in a split that has some (every word tagged outside one)."""
        if results.get("entities") and not results.get("predicted_entities"):
            return self.collapse_of(
                scoring.split.name, f"no entity is predicted in the {results['examples']} "
                f"texts (they hold {results['entities']})", results, "f1")
        return None

    def _scheme(self):
        tags = self.tags(self.task_options, self.settings.data_dir)
        return "bioes" if any(t[0] in "ES" for t in tags) else "iob2"

    def _write_conll(self, scoring, encoded, gold, predicted):
        split = scoring.split
        for name, sequences in (("gold", gold), ("predicted", predicted)):
            path = os.path.join(scoring.output_dir, f"{split.name}_{name}.conll")
            with atomic_file(path, "w", encoding="utf-8") as f:
                for example, enc, tags in zip(split.examples, encoded, sequences):
                    for (start, end), tag in zip(enc.spans, tags):
                        word = example.text[start:end]
                        f.write(f"{word if word.strip() and word.split() == [word] else '_'}"
                                f"\t{tag}\n")
                    f.write("\n")

    def write_predictions(self, scoring):
        encoded, predicted = self.predicted_tags(scoring)
        examples = scoring.split.examples
        tags = self.tags(self.task_options, self.settings.data_dir)
        entities = token_features.char_entities([e.text for e in examples],
                                                [e.spans for e in encoded], predicted, tags)
        path = os.path.join(scoring.output_dir, f"{scoring.split.name}_predictions.jsonl")
        with atomic_file(path, "w", encoding="utf-8") as f:
            for example, enc, word_tags, found in zip(examples, encoded, predicted, entities):
                row = {"id": example.guid, "text": example.text, "entities": found,
                       "words": [example.text[s:e] for s, e in enc.spans], "tags": word_tags}
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        return path

    def serving_module(self, model, tokenizer, settings, model_dir, export_options):
        from albert_tf.export.token_classification import TokenClassifierServing

        tags = self.tags(self.task_options, settings.data_dir)
        module = TokenClassifierServing(model, tokenizer, settings.max_seq_length, tags)
        return module, {"inputs": ["text"], "tags": list(tags)}


def tag_baseline(gold):
    """The most-frequent-tag baseline (every word tagged with the split's most
    frequent tag, `O` in NER: no entity found): its tag, accuracy and F1."""
    counts = collections.Counter(tag for tags in gold for tag in tags)
    if not counts:
        return {}
    tag = min(counts, key=lambda t: (-counts[t], t))
    scores = ner_eval.score(gold, [[tag] * len(tags) for tags in gold])
    return {"baseline_tag": tag, "baseline_accuracy": scores["accuracy"],
            "baseline_f1": scores["f1"]}


register(TokenClassificationTask(declarations()["token_classification"]))
