import pytest
import tensorflow as tf

from albert_tf.training import devices

CPU = tf.distribute.OneDeviceStrategy("/cpu:0")


@pytest.mark.parametrize("speedup, policy", [(0.0, "float32"), (0.5, "float32"),
                                             (1.2, "float32"), (2.0, "mixed_bfloat16")])
def test_auto_precision_on_a_cpu_follows_the_measured_bf16_speedup(monkeypatch, speedup, policy):
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: speedup)
    assert devices.resolve_precision("auto", "auto", CPU) == (policy, False)


def test_explicit_settings_are_kept(monkeypatch):
    monkeypatch.setattr(devices, "cpu_bf16_speedup", lambda: 0.5)
    assert devices.resolve_precision("bf16", "on", CPU) == ("mixed_bfloat16", True)
    assert devices.resolve_precision("fp16", "off", CPU) == ("mixed_float16", False)


def test_bf16_speedup_is_measured_once_per_process():
    first = devices.cpu_bf16_speedup()
    assert first == 0.0 if not devices.cpu_has_bf16() else first > 0
    assert devices.cpu_bf16_speedup() is first  # cached


@pytest.mark.parametrize("precision, xla, field", [("fast", "auto", "precision"),
                                                   ("bf16", "yes", "xla")])
def test_bad_settings_name_the_field(precision, xla, field):
    with pytest.raises(ValueError, match=field):
        devices.resolve_precision(precision, xla, CPU)


@pytest.mark.parametrize("cap, usable", [(None, True), ("AVX2", False), ("avx512_core", False),
                                         ("AVX512_CORE_BF16", True), ("AVX512_CORE_AMX", True)])
def test_a_onednn_isa_cap_below_bf16_leaves_no_bf16(monkeypatch, cap, usable):
    monkeypatch.setattr(devices, "_cpu_flags", lambda: "flags : fpu avx2 avx512_bf16 amx_bf16")
    if cap is None:
        monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    else:
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", cap)
    assert devices.cpu_has_bf16() == usable
    monkeypatch.setattr(devices, "_cpu_flags", lambda: "flags : fpu avx2 fma")
    assert not devices.cpu_has_bf16()
