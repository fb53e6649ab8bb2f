"""ALBERT pretraining data: n-gram masked-LM + sentence-order (SOP) instances.

Data side (`python -m albert_tf.create_pretraining_data`):

- `documents`: documents of sentences from raw text (`lines` or `prose`), streamed.
- `sentences`: the prose sentence splitter and chapter-heading rule.
- `instances`: segment pairs with SOP (or NSP) labels, per document.
- `masking`: whole-word n-gram masking, 80/10/10 corruption.
- `records`: the TFRecord format (google-research/albert's feature names)
  and the reader `pretraining_dataset` (which also takes albert_tf's earlier
  records); `writer`: the sharded, atomic writer.
- `options`: `DataOptions`, the settings of a run.
- `pipeline`: the streamed run over a corpus (`create_pretraining_data`).
- `statistics`: the distribution of a set of records (lengths, masking,
  n-gram runs, labels), to compare with the reference's.

The sampling is the reference's by default (`DataOptions` names each choice
and an alternative). Names are imported on first use, so the text-side
modules load without TensorFlow (only `records`, `writer` and `pipeline`
need it).
"""

from albert_tf.lazy import lazy_exports

_EXPORTS = {
    "DataOptions": "albert_tf.pretraining.options",
    "create_pretraining_data": "albert_tf.pretraining.pipeline",
    "pretraining_dataset": "albert_tf.pretraining.records",
    "read_records": "albert_tf.pretraining.records",
    "feature_spec": "albert_tf.pretraining.records",
    "record_statistics": "albert_tf.pretraining.statistics",
    "read_documents": "albert_tf.pretraining.documents",
    "split_sentences": "albert_tf.pretraining.sentences",
    "mask_sequence": "albert_tf.pretraining.masking",
    "VocabularyTables": "albert_tf.pretraining.masking",
    "document_instances": "albert_tf.pretraining.instances",
    "Instance": "albert_tf.pretraining.instances",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
