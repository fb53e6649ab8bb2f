"""`web`: a static page and albert.js that tokenize and predict in the browser.

    --formats=web                    web/, on the dynamic_int8 TFLite model
    --formats=web:float16            web/, on the float16 one (or float32)

`bundle` writes it (the vocabulary type's tokenizer, the serving module's
decoder, LiteRT.js); `assets/` holds the page, albert.js, text.js and the
built-in serving modules' decoders.
"""

import dataclasses

from albert_tf.export.formats import Format, register
from albert_tf.settings import Settings, setting

# LiteRT.js's WebAssembly builds (`bundle.WASM_BUILDS`): "auto" ships both, and each
# browser loads one.
WASM_CHOICES = ("auto", "relaxed_simd", "compat")


@dataclasses.dataclass(frozen=True, kw_only=True)
class WebOptions(Settings):
    web_wasm: str = setting(
        "auto", "The web format's LiteRT.js WebAssembly: auto (both builds; each browser "
        "loads one: relaxed_simd where it has relaxed SIMD, else compat), relaxed_simd "
        "(Chromium-based browsers; the fastest) or compat (every browser; 9.3 MB less than "
        "auto, about 3x slower where relaxed SIMD exists).", choices=WASM_CHOICES)


def _write(job, variant, path):
    from albert_tf.export.formats.web import bundle
    from albert_tf.tokenizer.loading import load_tokenizer

    host = load_tokenizer(job.model_dir, host=True)
    wasm = job.options.web_wasm if job.options is not None else "auto"
    return bundle.write(job.module, host, path, variant, wasm_build=wasm)


def _check(settings):
    from albert_tf.export.formats.web import bundle

    bundle.check_runtime()


def _prepare(module):
    from albert_tf.export.formats.web import bundle

    bundle.head_settings(module)


# (full-integer int8 needs calibration data: not offered)
register(Format(
    "web", "web/, a static page and albert.js that tokenize and predict in the browser on "
    "LiteRT.js, on the TFLite model of its variant (dynamic_int8, float16 or float32)",
    {"dynamic_int8": ("web", "int8 weights"), "float16": ("web", "float16 weights"),
     "float32": ("web", "no reduction")},
    _write, check=_check, prepare=_prepare, options_class=WebOptions))
