"""The web export: a folder that tokenizes and predicts in the browser.

The bundle is `albert.js` (loading, the model's runs, a batch's rows) and
`text.js` (what every decoder shares), with two modules that the export
declares: `tokenizer.js`, the vocabulary type's own (`VocabularyType.web_tokenizer`,
with its tables `tokenizer.json` and its vocabulary file), and `decoder.js`,
the serving module's own (`ServingModule.web_decoder`), which turns the
`encoded` model's outputs into `serving_default`'s answer. `albert.js` knows no
vocabulary type and no task: a new one brings its modules. SentencePiece itself
runs in the browser as the real library compiled to WebAssembly
(`@sctg/sentencepiece-js`); the model on LiteRT.js.
"""

import functools
import json
import pathlib
import re
import shutil

from albert_tf.export.formats.web import WASM_CHOICES
from albert_tf.tokenizer import normalization
from albert_tf.tokenizer.base import get_type
from albert_tf.tokenizer.web import TEXT_SCRIPT, special_ids

ASSETS = pathlib.Path(__file__).with_name("assets")


# --- The bundle -------------------------------------------------------------

WEB_DIR = "web"  # inside the export's version folder
MODEL_FILE, HEAD_FILE, TABLES_FILE = "model.tflite", "head.json", "tokenizer.json"
# The bundle's scripts: fixed ones from web_assets/, and the two the export declares.
ASSET_FILES = ("albert.js", "text.js", "index.html")
TOKENIZER_SCRIPT, TOKENIZER_TEXT_SCRIPT, DECODER_SCRIPT = (
    "tokenizer.js", "tokenizer_text.js", "decoder.js")
DEFAULT_VARIANT = "dynamic_int8"
NODE_MODULES_HINT = "run `make web-deps` (npm ci) in the albert_tf checkout"

# (package file under node_modules, file in the bundle, {import to rewrite: new import}).
RUNTIME_FILES = (
    ("@litertjs/core/dist/index.js", "runtime/litert.js",
     {'from "@litertjs/wasm-utils"': 'from "./wasm-utils.js"'}),
    ("@litertjs/wasm-utils/dist/bundle.js", "runtime/wasm-utils.js", {}),
    # Its Node-only imports (the page passes the model's bytes itself).
    ("@sctg/sentencepiece-js/dist/index.js", "runtime/sentencepiece.js",
     {"import * as fs from 'fs';": "const fs = {};",
      "import { Buffer as Buffer$1 } from 'buffer';": "const Buffer$1 = undefined;"}),
)
# LiteRT.js's WebAssembly builds (each a .js loader and its .wasm, 9.3 MB).
# Left to choose ("auto": both shipped), LiteRT.js loads the relaxed-SIMD build
# where the browser has relaxed SIMD (Chromium 114+) and the compatibility
# build elsewhere: a page downloads one. One build named here is the only one
# shipped and is loaded by name: "compat" runs in every browser with
# WebAssembly SIMD, about 3x slower where relaxed SIMD exists
# (bench/web_latency.py); "relaxed_simd" only where relaxed SIMD exists. (The
# threaded build needs cross-origin isolation, which a plain static server
# does not give; JSPI is not in every browser.)
WASM_BUILDS = {"relaxed_simd": "litert_wasm_internal", "compat": "litert_wasm_compat_internal"}
DEFAULT_WASM_BUILD = "auto"


# The sample models the SentencePiece package embeds (3.3 MB of base64) that
# the page never uses: it loads the export's own vocabulary.
_SAMPLE_MODELS = re.compile(rb'((?:const|var|let) (?:clean_30k|llama_3_1_tokeniser|smart)_b64 = )"[^"]*"')


def _without_sample_models(data, path):
    data, count = _SAMPLE_MODELS.subn(rb'\1""', data)
    if count != 3:
        raise ValueError(f"{path}: not the pinned version (sample models not found); "
                         f"{NODE_MODULES_HINT}")
    return data


def node_modules():
    """The checkout's node_modules folder (where `make web-deps` installs)."""
    return pathlib.Path(__file__).resolve().parents[4] / "node_modules"


def check_runtime(root=None):
    """Raises a one-line `FileNotFoundError` when a runtime file is missing."""
    root = pathlib.Path(root or node_modules())
    for source in [s for s, _, _ in RUNTIME_FILES] + [
            f"@litertjs/core/wasm/{name}.{ext}" for name in WASM_BUILDS.values()
            for ext in ("js", "wasm")]:
        if not (root / source).is_file():
            raise FileNotFoundError(f"--web needs {root / source}: {NODE_MODULES_HINT}")


def _ranges(code_points):
    """Sorted code points as `[first, last]` runs."""
    out = []
    for cp in code_points:
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


@functools.lru_cache(maxsize=None)
def punctuation_ranges():
    """The code points the serving graph's `\\p{P}` (RE2, `regex_full_match`)
    matches, as runs: asked of the graph's own op, so that the page's word and
    cut rules are the graph's whatever the browser's Unicode version."""
    import tensorflow as tf

    every = "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x110000)))
    kept = tf.strings.regex_replace(tf.constant(every.encode("utf-8")), r"\P{P}", "")
    return _ranges(ord(c) for c in kept.numpy().decode("utf-8"))


def text_rules(tokenizer):
    """The rules of the graph's text cuts (`text_limit`) and words
    (`albert_tf.steps.words.graph_word_starts`) for `tokenizer` (in-graph), JSON-able."""
    from albert_tf.steps import text_limit
    from albert_tf.steps.words import ASCII_PUNCTUATION, CJK_RANGES

    return dict(text_limit.rules(tokenizer), punctuation=punctuation_ranges(),
                standalone=sorted(list(r) for r in CJK_RANGES + ASCII_PUNCTUATION),
                solid_whitespace=_ranges(normalization.whitespace_code_points()))


def head_settings(module):
    """What the page needs of the task: its inputs, its decoding, its labels,
    and the text rules of its tokenizer."""
    if getattr(module, "web_decoder", None) is None:
        raise ValueError(f"--web: exports of {type(module).__name__} have no web decoder "
                         "(`ServingModule.web_decoder`)")
    try:
        head = module.decoding_settings()
    except ValueError as e:
        raise ValueError(f"--web: {e}") from None
    head.update(max_seq_length=int(module.max_seq_length), token_inputs=list(module.input_names),
                text=text_rules(module.tokenizer))
    return head


def vocabulary_type(host_tokenizer):
    """The tokenizer's vocabulary type, once it is known to have a web tokenizer."""
    kind = get_type(host_tokenizer.vocabulary_type)
    if kind.web_tokenizer is None:
        raise ValueError(f"--web: the {kind.name} vocabulary type has no web tokenizer "
                         "(`VocabularyType.web_tokenizer`)")
    return kind


def write_tokenizer(folder, host_tokenizer, runtime=None):
    """The bundle's tokenizer in `folder`: the vocabulary type's script and the
    tables it reads, the vocabulary file and the runtime scripts (SentencePiece's);
    returns the vocabulary's file name."""
    kind = vocabulary_type(host_tokenizer)
    folder = pathlib.Path(folder)
    (folder / "runtime").mkdir(parents=True, exist_ok=True)
    copy_runtime_scripts(folder, runtime)
    name, data = kind.web_vocabulary(host_tokenizer)
    (folder / name).write_bytes(data)
    (folder / TABLES_FILE).write_text(
        json.dumps(kind.web_tables(host_tokenizer), separators=(",", ":"), ensure_ascii=False),
        encoding="utf-8")
    shutil.copyfile(TEXT_SCRIPT, folder / TOKENIZER_TEXT_SCRIPT)
    shutil.copyfile(kind.web_tokenizer, folder / TOKENIZER_SCRIPT)
    return name


def copy_runtime_scripts(folder, runtime=None):
    """LiteRT.js's and SentencePiece's scripts into `folder`/runtime (rewritten for
    the browser: see `RUNTIME_FILES`)."""
    runtime = pathlib.Path(runtime or node_modules())
    folder = pathlib.Path(folder)
    for source, target, rewrites in RUNTIME_FILES:
        data = (runtime / source).read_bytes()
        if rewrites:
            text = data.decode("utf-8")
            for old, new in rewrites.items():
                if old not in text:
                    raise ValueError(f"{runtime / source}: not the pinned version (no {old!r}); "
                                     f"{NODE_MODULES_HINT}")
                text = text.replace(old, new)
            data = text.encode("utf-8")
        if target == "runtime/sentencepiece.js":
            data = _without_sample_models(data, runtime / source)
        (folder / target).write_bytes(data)


def copy_wasm(folder, runtime=None, wasm_build=DEFAULT_WASM_BUILD):
    """LiteRT.js's WebAssembly (its `wasm_build`, or both builds for "auto") into
    `folder`/runtime/wasm; returns the builds copied."""
    runtime = pathlib.Path(runtime or node_modules())
    target = pathlib.Path(folder) / "runtime" / "wasm"
    target.mkdir(parents=True, exist_ok=True)
    builds = list(WASM_BUILDS.values()) if wasm_build == "auto" else [WASM_BUILDS[wasm_build]]
    for wasm in builds:
        for ext in ("js", "wasm"):
            shutil.copyfile(runtime / f"@litertjs/core/wasm/{wasm}.{ext}",
                            target / f"{wasm}.{ext}")
    return builds


def write(module, host_tokenizer, folder, variant=DEFAULT_VARIANT, runtime=None,
          wasm_build=DEFAULT_WASM_BUILD):
    """Writes the web bundle of a serving module into `folder` (created), with
    LiteRT.js's `wasm_build` (a key of `WASM_BUILDS`) as its only WebAssembly,
    or both builds (`"auto"`: the browser's features choose).

    Returns a description of it (JSON-able): its files and their sizes.
    """
    from albert_tf.export.formats.tflite import convert

    if wasm_build not in WASM_CHOICES:
        raise ValueError(f"unknown LiteRT.js build {wasm_build!r}; choose from "
                         f"{', '.join(WASM_CHOICES)}")
    check_runtime(runtime)
    head = head_settings(module)
    vocabulary_type(host_tokenizer)  # (one without a web tokenizer refused before any work)
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True)
    vocab_name = write_tokenizer(folder, host_tokenizer, runtime)
    builds = copy_wasm(folder, runtime, wasm_build)
    # Batch 1: LiteRT.js runs a model at the shapes it was converted with.
    described = convert.write(module, str(folder / MODEL_FILE), variant, batch_size=1)
    # A folder lets LiteRT.js choose among the builds in it; a file is loaded as named.
    head.update(vocabulary=vocab_name, model=MODEL_FILE, variant=described["variant"],
                special=special_ids(host_tokenizer), wasm_build=wasm_build,
                runtime="runtime/wasm/" if len(builds) > 1 else f"runtime/wasm/{builds[0]}.js")
    (folder / HEAD_FILE).write_text(json.dumps(head, indent=1), encoding="utf-8")
    for name in ASSET_FILES:
        shutil.copyfile(ASSETS / name, folder / name)
    shutil.copyfile(module.web_decoder, folder / DECODER_SCRIPT)
    sizes = {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*"))
             if p.is_file()}
    return {"folder": WEB_DIR, "variant": described["variant"], "task": head["kind"],
            "bytes": sum(sizes.values()), "files": sizes}
