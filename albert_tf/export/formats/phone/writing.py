"""Writes the phone formats: a converted model, its tokenizer and labels, its metadata."""

import os

from albert_tf.export.formats.phone import convert, metadata
from albert_tf.io_utils import read_text

EMBEDDING_DESCRIPTION = "The pooled [CLS] output of the ALBERT encoder."


def _tokenizer(job):
    """`(ProcessUnitT, {file name: bytes})` of the export's vocabulary for the device."""
    from albert_tf.tokenizer.base import get_type
    from albert_tf.tokenizer.loading import find_vocabulary, load_tokenizer

    host = load_tokenizer(job.model_dir, host=True)
    kind, file_name, content = get_type(find_vocabulary(job.model_dir)[0]).device_vocabulary(host)
    return metadata.tokenizer_unit(kind, file_name), {file_name: content}


def _inputs(model_bytes, names):
    """The input tensors' metadata, in the model's input order (`names`: phone name ->
    module name; the metadata names are the Task Library's `ids`, `mask`, `segment_ids`)."""
    described = dict(zip(names, metadata.INPUT_DESCRIPTIONS))
    return [metadata.tensor(described[n], metadata.INPUT_DESCRIPTIONS[described[n]])
            for n in metadata.signature_names(model_bytes)]


def _write(path, job, variant, outputs, output_metadata, files, what, names=None):
    """Converts, adds the metadata and the files; returns the description.
    output_metadata: `{signature output name: TensorMetadataT}`."""
    module, names = job.module, names or convert.MEDIAPIPE_INPUTS
    model_bytes = convert.convert(module, outputs, variant, names)
    unit, vocabulary = _tokenizer(job)
    files = dict(files, **vocabulary)
    ordered = [output_metadata[n] for n in metadata.signature_names(model_bytes, outputs=True)]
    meta = metadata.model_metadata(
        "ALBERT " + what, f"ALBERT ({module.name}): {what}, max_seq_length "
        f"{module.max_seq_length}", _inputs(model_bytes, names), ordered, unit)
    packed = metadata.populate(model_bytes, meta, files)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(packed)
    return {"file": os.path.relpath(path, os.path.dirname(os.path.dirname(path))),
            "variant": variant, "inputs": [f"{convert.SIGNATURE}_{n}:0" for n in names],
            "max_seq_length": module.max_seq_length, "files": sorted(files),
            "bytes": len(packed)}


def write_classifier(job, variant, path):
    """The `TextClassifier` model: `scores` `(1, num_labels)` with the labels file."""
    labels = "".join(f"{name}\n" for name in label_names(job))
    output = metadata.tensor("probability", "Probabilities of the labels respectively.",
                             metadata.LABELS_FILE)
    described = _write(path, job, variant, convert.classifier_scores, {"scores": output},
                       {metadata.LABELS_FILE: labels.encode("utf-8")}, "text classifier")
    return dict(described, labels=label_names(job))


def write_embedder(job, variant, path):
    """The `TextEmbedder` model: `embedding` `(1, hidden_dim)`."""
    output = metadata.tensor("embedding", EMBEDDING_DESCRIPTION)
    return _write(path, job, variant, convert.pooled_embedding, {"embedding": output}, {},
                  "text embedder")


def write_question_answerer(job, variant, path):
    """The Task Library's `BertQuestionAnswerer` model: `ids`, `mask`, `segment_ids` in,
    `end_logits`, `start_logits` `(1, max_seq_length)` out."""
    outputs = {name: metadata.tensor(name, f"The {name.split('_')[0]} of the answer span's "
                                     "logits over the tokens.")
               for name in ("end_logits", "start_logits")}
    return _write(path, job, variant, convert.span_logits, outputs, {},
                  "question answerer", names=convert.QA_INPUTS)


def label_names(job):
    """The labels as the runtime shows them: the names of `--mediapipe_label_names`,
    else the served labels (the names the model's data gave them, e.g. CLUE's
    labels.json kept in the model folder). A file that names some labels but not
    all is refused, naming one missing."""
    labels = list(job.module.labels)
    path = getattr(job.options, "mediapipe_label_names", "") if job.options else ""
    if not path:
        return labels
    names = read_label_names(path)
    missing = [label for label in labels if label not in names]
    if missing:
        raise ValueError(f"mediapipe_label_names: {path} names no label {missing[0]!r} "
                         f"(the model's labels: {', '.join(labels)})")
    return [names[label] for label in labels]


def read_label_names(path):
    """`{label: name}` of CLUE's labels.json (`{"label", "label_desc"}` a line) or of
    one JSON object."""
    import json

    flag = "--mediapipe_label_names"
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{flag}: no such file {path}")
    try:
        text = read_text(path)
    except ValueError as e:
        raise ValueError(f"{flag}: {e}") from None
    try:
        found = json.loads(text)
    except json.JSONDecodeError:  # JSON lines
        try:
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
            return {str(row["label"]): str(row["label_desc"]) for row in rows}
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ValueError(f"{flag}: {path} is neither a JSON object nor CLUE's "
                             f"labels.json (a JSON object a line with 'label' and "
                             f"'label_desc'): {e}") from None
    if isinstance(found, dict) and "label_desc" in found:  # a one-line labels.json
        return {str(found["label"]): str(found["label_desc"])}
    if not isinstance(found, dict):
        raise ValueError(f"{flag}: {path} is neither a JSON object nor CLUE's labels.json")
    return {str(k): str(v) for k, v in found.items()}


def check_classifier(module):
    """Refuses a serving module that is not a one-text classifier."""
    if getattr(module, "labels", None) is None or getattr(module, "pair", True):
        raise ValueError(f"formats: mediapipe is for one-text classifiers (sst2, cola, tnews, "
                         f"iflytek, text_classification); this export is a "
                         f"{type(module).__name__}{' of text pairs' if getattr(module, 'pair', False) else ''}")


def check_question_answerer(module):
    """Refuses a serving module that is not an extractive QA model of a span head."""
    if getattr(module, "head", None) != "span" or "p_mask" not in module.input_names:
        raise ValueError(f"formats: task_library_qa is for extractive question answering "
                         f"with the span head (squad, squad_v2, cmrc2018); this export is a "
                         f"{type(module).__name__}"
                         f"{' with the ' + module.head + ' head' if hasattr(module, 'head') else ''}")


def check_embedder(module):
    """Refuses a serving module whose model has no backbone to pool."""
    model = getattr(getattr(module, "_predict", None), "func", None)
    if not hasattr(getattr(model, "backbone", None), "pooled_output"):
        raise ValueError(f"formats: mediapipe_embedder needs an ALBERT backbone; "
                         f"{type(module).__name__} has none")
