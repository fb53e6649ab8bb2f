"""The web export: a folder that tokenizes and predicts in the browser.

`tokenizer_tables(tokenizer)` is everything `web_assets/tokenizer.js` needs
to tokenize exactly as the host tokenizers do, computed from the same Python
tables they use (`normalization.mapping_table`, whitespace, case classes;
`wordpiece_chars.property_ranges`, `emission_table`), so the browser never
calls its own Unicode functions (whose Unicode version may differ).
SentencePiece itself runs in the browser as the real library compiled to
WebAssembly (`@sctg/sentencepiece-js`); the preprocessing, the digit-comma
rule and the offsets are `tokenizer.js`'s.
"""

import functools
import json
import pathlib
import re
import shutil

from albert_tf.tokenizer import normalization
from albert_tf.tokenizer.wordpiece import chars as wordpiece_chars

ASSETS = pathlib.Path(__file__).with_name("web_assets")


def _deltas(values):
    """Sorted integers as their first value then differences (a compact JSON list)."""
    out, last = [], 0
    for value in values:
        out.append(value - last)
        last = value
    return out


def _spm_tables(tokenizer):
    table = normalization.mapping_table(tokenizer.lowercase)
    case_starts, case_classes = normalization.case_class_ranges()
    rules = tokenizer.vocab.digit_comma_replacements()
    return {
        "type": "sentencepiece",
        "lowercase": bool(tokenizer.lowercase),
        "whitespace": _deltas(normalization.whitespace_code_points()),
        "mapping": {
            "keys": _deltas(table.keys),
            # No emission holds U+0000 (it maps to itself), so it separates them.
            "emissions": "\0".join(table.emissions),
            "edges": "".join(str(l * 3 + r) for l, r in zip(table.left, table.right)),
            "sigma": [k for k, s in zip(table.keys, table.sigma) if s],
        },
        "case": {"starts": _deltas(case_starts), "classes": "".join(map(str, case_classes))},
        "digit_comma": {str(index): rule for index, rule in rules.items()},
        "special": _special_ids(tokenizer),
    }


def _wordpiece_tables(tokenizer):
    starts, values = wordpiece_chars.property_ranges()
    emissions = wordpiece_chars.emission_table() if tokenizer.lowercase else {}
    keys = sorted(emissions)
    return {
        "type": "wordpiece",
        "lowercase": bool(tokenizer.lowercase),
        "properties": {"starts": _deltas(starts), "values": list(values)},
        "emission": {"keys": _deltas([ord(k) for k in keys]),
                     "values": "\0".join(emissions[k] for k in keys)},
        "special": _special_ids(tokenizer),
    }


def _special_ids(tokenizer):
    return {name: int(getattr(tokenizer, f"{name}_id"))
            for name in ("pad", "unk", "cls", "sep", "mask")}


def tokenizer_tables(tokenizer):
    """The JSON-ready tables of a host tokenizer (`HostTokenizer` or `HostWordPieceTokenizer`)."""
    if tokenizer.vocabulary_type == "sentencepiece":
        return _spm_tables(tokenizer)
    if tokenizer.vocabulary_type == "wordpiece":
        return _wordpiece_tables(tokenizer)
    raise ValueError(f"no web tokenizer for vocabulary type {tokenizer.vocabulary_type!r}")


# --- The bundle -------------------------------------------------------------

WEB_DIR = "web"  # inside the export's version folder
MODEL_FILE, HEAD_FILE, TABLES_FILE = "model.tflite", "head.json", "tokenizer.json"
DEFAULT_VARIANT = "dynamic_int8"
VARIANTS = ("float32", "float16", "dynamic_int8")  # full-integer int8 needs calibration data
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
WASM_CHOICES = ("auto",) + tuple(WASM_BUILDS)
DEFAULT_WASM_BUILD = "auto"
ASSET_FILES = ("albert.js", "decode.js", "tokenizer.js", "index.html")


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
    return pathlib.Path(__file__).resolve().parents[2] / "node_modules"


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
    try:
        head = module.decoding_settings()
    except ValueError as e:
        raise ValueError(f"--web: {e}") from None
    head.update(max_seq_length=int(module.max_seq_length), token_inputs=list(module.input_names),
                text=text_rules(module.tokenizer))
    return head


def _vocabulary_file(tokenizer):
    if tokenizer.vocabulary_type == "sentencepiece":
        return "vocab.model", tokenizer.proto
    return "vocab.txt", "".join(t + "\n" for t in tokenizer.tokens).encode("utf-8")


def write(module, host_tokenizer, folder, variant=DEFAULT_VARIANT, runtime=None,
          wasm_build=DEFAULT_WASM_BUILD):
    """Writes the web bundle of a serving module into `folder` (created), with
    LiteRT.js's `wasm_build` (a key of `WASM_BUILDS`) as its only WebAssembly,
    or both builds (`"auto"`: the browser's features choose).

    Returns a description of it (JSON-able): its files and their sizes.
    """
    from albert_tf.export import tflite

    if wasm_build not in WASM_CHOICES:
        raise ValueError(f"unknown LiteRT.js build {wasm_build!r}; choose from "
                         f"{', '.join(WASM_CHOICES)}")
    check_runtime(runtime)
    head = head_settings(module)
    runtime = pathlib.Path(runtime or node_modules())
    folder = pathlib.Path(folder)
    (folder / "runtime" / "wasm").mkdir(parents=True)
    # Batch 1: LiteRT.js runs a model at the shapes it was converted with.
    described = tflite.write(module, str(folder / MODEL_FILE), variant, batch_size=1)
    vocab_name, vocab_bytes = _vocabulary_file(host_tokenizer)
    (folder / vocab_name).write_bytes(vocab_bytes)
    builds = list(WASM_BUILDS.values()) if wasm_build == "auto" else [WASM_BUILDS[wasm_build]]
    # A folder lets LiteRT.js choose among the builds in it; a file is loaded as named.
    head.update(vocabulary=vocab_name, model=MODEL_FILE, variant=described["variant"],
                special=_special_ids(host_tokenizer), wasm_build=wasm_build,
                runtime="runtime/wasm/" if len(builds) > 1 else f"runtime/wasm/{builds[0]}.js")
    (folder / HEAD_FILE).write_text(json.dumps(head, indent=1), encoding="utf-8")
    (folder / TABLES_FILE).write_text(
        json.dumps(tokenizer_tables(host_tokenizer), separators=(",", ":"), ensure_ascii=False),
        encoding="utf-8")
    for wasm in builds:
        for ext in ("js", "wasm"):
            shutil.copyfile(runtime / f"@litertjs/core/wasm/{wasm}.{ext}",
                            folder / "runtime" / "wasm" / f"{wasm}.{ext}")
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
    for name in ASSET_FILES:
        shutil.copyfile(ASSETS / name, folder / name)
    sizes = {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*"))
             if p.is_file()}
    return {"folder": WEB_DIR, "variant": described["variant"], "task": head["kind"],
            "bytes": sum(sizes.values()), "files": sizes}
