"""TFLite Model Metadata: what MediaPipe and the Task Library read from a `.tflite`.

The metadata is a flatbuffer of the schema `metadata_schema.fbs` (its generated
module `metadata_schema`, vendored), stored in the model's `metadata` list under
the name `TFLITE_METADATA`; the files it names (the tokenizer's, the labels) are
appended to the model as a zip archive, which the runtimes open from the same
bytes. This is the layout of tflite-support's `MetadataPopulator`: the model
flatbuffer first (identifier `TFL3`), then the zip's entries and its central
directory, whose offsets count from the start of the file.
"""

import io
import zipfile

import flatbuffers

from albert_tf.export.formats.phone import metadata_schema as schema

METADATA_NAME = "TFLITE_METADATA"
MODEL_IDENTIFIER = b"TFL3"
METADATA_IDENTIFIER = b"M001"
# Tokenizer process units were added in schema version 1.1.0; nothing newer is used.
MIN_PARSER_VERSION = "1.1.0"
LABELS_FILE = "labels.txt"
INPUT_DESCRIPTIONS = {
    "ids": "Tokenized ids of the input text.",
    "mask": "Mask with 1 for real tokens and 0 for padding tokens.",
    "segment_ids": "0 for the first sequence, 1 for the second sequence if exists."}


def _file(name, description, kind=schema.AssociatedFileType.UNKNOWN):
    found = schema.AssociatedFileT()
    found.name, found.description, found.type = name, description, kind
    return found


def tokenizer_unit(kind, file_name):
    """The input process unit of the runtime's tokenizer: `kind` "sentencepiece"
    (`file_name` a SentencePiece `.model`) or "bert" (a WordPiece `vocab.txt`)."""
    unit = schema.ProcessUnitT()
    if kind == "sentencepiece":
        unit.optionsType = schema.ProcessUnitOptions.SentencePieceTokenizerOptions
        unit.options = schema.SentencePieceTokenizerOptionsT()
        unit.options.sentencePieceModel = [_file(file_name, "The SentencePiece model file.")]
    elif kind == "bert":
        unit.optionsType = schema.ProcessUnitOptions.BertTokenizerOptions
        unit.options = schema.BertTokenizerOptionsT()
        unit.options.vocabFile = [_file(file_name, "Vocabulary file to convert natural "
                                        "language words to embedding vectors.",
                                        schema.AssociatedFileType.VOCABULARY)]
    else:
        raise ValueError(f"no tokenizer process unit for {kind!r}; known: sentencepiece, bert")
    return unit


def tensor(name, description, labels_file=None):
    """A tensor's metadata; `labels_file`: the `TENSOR_AXIS_LABELS` file of its last axis."""
    found = schema.TensorMetadataT()
    found.name, found.description = name, description
    found.content = schema.ContentT()
    found.content.contentPropertiesType = schema.ContentProperties.FeatureProperties
    found.content.contentProperties = schema.FeaturePropertiesT()
    if labels_file:
        found.associatedFiles = [_file(labels_file, "Labels for the categories that the "
                                       "model can classify.",
                                       schema.AssociatedFileType.TENSOR_AXIS_LABELS)]
    return found


def model_metadata(name, description, inputs, outputs, unit):
    """The `M001` flatbuffer (bytes) of one subgraph.

    inputs / outputs: `TensorMetadataT`s in the order of the model's input / output
    tensors. unit: the tokenizer's `ProcessUnitT`.
    """
    subgraph = schema.SubGraphMetadataT()
    subgraph.inputTensorMetadata = list(inputs)
    subgraph.outputTensorMetadata = list(outputs)
    subgraph.inputProcessUnits = [unit]
    model = schema.ModelMetadataT()
    model.name, model.description, model.version = name, description, "1"
    model.author, model.license = "albert_tf", "Apache License. Version 2.0"
    model.minParserVersion = MIN_PARSER_VERSION
    model.subgraphMetadata = [subgraph]
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), METADATA_IDENTIFIER)
    return bytes(builder.Output())


def _model_schema():
    # TensorFlow's generated module of the TFLite model schema (schema.fbs): exporting
    # runs with TensorFlow.
    from tensorflow.lite.python import schema_py_generated

    return schema_py_generated


def signature_names(model_bytes, outputs=False):
    """The signature's names of the model's input (or output) tensors, in the
    subgraph's order: the order the metadata's tensor lists follow."""
    fb = _model_schema()
    model = fb.Model.GetRootAsModel(model_bytes, 0)
    graph, signature = model.Subgraphs(0), model.SignatureDefs(0)
    if outputs:
        order = [graph.Outputs(i) for i in range(graph.OutputsLength())]
        named = {signature.Outputs(i).TensorIndex(): signature.Outputs(i).Name().decode()
                 for i in range(signature.OutputsLength())}
    else:
        order = [graph.Inputs(i) for i in range(graph.InputsLength())]
        named = {signature.Inputs(i).TensorIndex(): signature.Inputs(i).Name().decode()
                 for i in range(signature.InputsLength())}
    return [named[index] for index in order]


def input_names(model_bytes):
    """The model's input tensor names, in the subgraph's input order."""
    fb = _model_schema()
    graph = fb.Model.GetRootAsModel(model_bytes, 0).Subgraphs(0)
    return [graph.Tensors(graph.Inputs(i)).Name().decode() for i in range(graph.InputsLength())]


def populate(model_bytes, metadata_bytes, files):
    """The model with `metadata_bytes` under `TFLITE_METADATA` and `files`
    (`{name: bytes}`) appended as a zip (a model without metadata in)."""
    fb = _model_schema()
    model = fb.ModelT.InitFromObj(fb.Model.GetRootAsModel(model_bytes, 0))
    buffer = fb.BufferT()
    buffer.data = list(metadata_bytes)
    model.buffers = (model.buffers or []) + [buffer]
    entry = fb.MetadataT()
    entry.name, entry.buffer = METADATA_NAME, len(model.buffers) - 1
    model.metadata = [m for m in (model.metadata or []) if m.name != METADATA_NAME.encode()]
    model.metadata.append(entry)
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), MODEL_IDENTIFIER)
    out = io.BytesIO(bytes(builder.Output()))
    out.seek(0, io.SEEK_END)
    with zipfile.ZipFile(out, "a") as archive:  # appended after the flatbuffer
        for name, content in files.items():
            archive.writestr(name, content)
    return out.getvalue()


def read(model_bytes):
    """`(ModelMetadataT, {name: bytes})`: the metadata and the packed files of a model."""
    fb = _model_schema()
    model = fb.Model.GetRootAsModel(model_bytes, 0)
    for i in range(model.MetadataLength()):
        if model.Metadata(i).Name().decode() == METADATA_NAME:
            data = model.Buffers(model.Metadata(i).Buffer()).DataAsNumpy().tobytes()
            break
    else:
        raise ValueError(f"the model has no {METADATA_NAME}")
    if not schema.ModelMetadata.ModelMetadataBufferHasIdentifier(data, 0):
        raise ValueError(f"{METADATA_NAME} is not a {METADATA_IDENTIFIER.decode()} buffer")
    found = schema.ModelMetadataT.InitFromObj(schema.ModelMetadata.GetRootAsModelMetadata(data, 0))
    return found, packed_files(model_bytes)


def packed_files(model_bytes):
    """`{name: bytes}` of the zip appended to a model ({} when none)."""
    stream = io.BytesIO(model_bytes)
    if not zipfile.is_zipfile(stream):
        return {}
    with zipfile.ZipFile(stream) as archive:
        return {name: archive.read(name) for name in archive.namelist()}
