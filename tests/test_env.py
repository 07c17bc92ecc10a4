"""Tests of tricks_helpers.env: the environment card."""

import re
import subprocess

import pytest
import torch

from tricks_helpers import env
from tricks_helpers.env import cpu as env_cpu


def test_card_reports_this_torch_and_threads():
    card = env.environment_card()
    assert torch.__version__.startswith(card.torch_version)
    assert card.threads == torch.get_num_threads()
    assert card.device == ("cuda" if torch.cuda.is_available() else "cpu")


def test_extras_are_sorted_lines():
    card = env.environment_card(extras={"zlib": "1", "lmdb": "2"})
    assert [line.split()[0] for line in card.lines()][-2:] == ["lmdb", "zlib"]


def test_print_environment_prints_the_card(capsys):
    card = env.print_environment()
    assert capsys.readouterr().out.strip() == str(card)


def test_cpu_flags_and_model_from_a_file(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Test CPU 9000\nflags\t\t: fpu sse avx512_bf16\n")
    assert env.cpu_flags(info) == {"fpu", "sse", "avx512_bf16"}
    assert env.cpu_model(info) == "Test CPU 9000"


def test_missing_cpuinfo_gives_empty_flags_without_torch_fallback(tmp_path):
    assert env.cpu_flags(tmp_path / "absent", torch_fallback=False) == frozenset()
    assert isinstance(env.cpu_model(tmp_path / "absent"), str)


# Off x86 Linux (issue 31 part 2): /proc/cpuinfo is absent (macOS, Windows) or names no model
# (Linux on Arm); torch's cpuinfo capabilities and the platform answer instead.
APPLE_M2 = {"architecture": "arm64", "cpu_name": "", "neon": True, "bf16": True, "i8mm": True}
APPLE_M2 |= {"sve": False, "sme": False, "sve_max_length": 0}


def fake_platform(monkeypatch, tmp_path, *, system, machine, processor="", caps=None, brand=None):
    """This process as another machine: no /proc/cpuinfo, the platform's answers, torch's caps."""
    monkeypatch.setattr(env_cpu, "CPUINFO", tmp_path / "absent")
    monkeypatch.setattr(env_cpu.platform, "system", lambda: system)
    monkeypatch.setattr(env_cpu.platform, "machine", lambda: machine)
    monkeypatch.setattr(env_cpu.platform, "processor", lambda: processor)
    monkeypatch.setattr(env_cpu, "_torch_capabilities", lambda: dict(caps or {}))
    calls = []

    def sysctl(args, **kw):
        calls.append(args)
        out = "" if brand is None else brand + "\n"
        return subprocess.CompletedProcess(args, 0 if brand else 1, stdout=out, stderr="")

    monkeypatch.setattr(env_cpu.subprocess, "run", sysctl)
    return calls


def test_apple_silicon_is_named_from_sysctl_and_torch(monkeypatch, tmp_path):
    calls = fake_platform(
        monkeypatch,
        tmp_path,
        system="Darwin",
        machine="arm64",
        processor="arm",
        caps=APPLE_M2,
        brand="Apple M2",
    )
    assert env.cpu_model() == "Apple M2"
    assert calls == [["sysctl", "-n", "machdep.cpu.brand_string"]]
    assert env.cpu_arch() == "arm64"
    assert env.cpu_flags() == {"neon", "bf16", "i8mm"}  # True capabilities only
    assert env.cpu_bf16_flags() == {"bf16"}


def test_without_sysctl_the_torch_name_then_the_platform_name_the_cpu(monkeypatch, tmp_path):
    fake_platform(monkeypatch, tmp_path, system="Darwin", machine="arm64", processor="arm")
    assert env.cpu_model() == "arm"  # sysctl failed, torch has no name
    fake_platform(
        monkeypatch,
        tmp_path,
        system="Darwin",
        machine="arm64",
        caps={"cpu_name": "Apple M1"},
    )
    assert env.cpu_model() == "Apple M1"
    fake_platform(monkeypatch, tmp_path, system="Linux", machine="", caps={"cpu_name": "Unknown"})
    assert env.cpu_model() == "unknown CPU"


def test_linux_on_arm_keeps_proc_features_and_takes_torch_name(monkeypatch, tmp_path):
    calls = fake_platform(
        monkeypatch,
        tmp_path,
        system="Linux",
        machine="aarch64",
        caps={"cpu_name": "Neoverse-V1", "sve": True},
    )
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nBogoMIPS\t: 2100.00\nFeatures\t: fp asimd sve bf16 i8mm\n")
    monkeypatch.setattr(env_cpu, "CPUINFO", info)
    assert env.cpu_flags() == {"fp", "asimd", "sve", "bf16", "i8mm"}  # the file, not torch
    assert env.cpu_model() == "Neoverse-V1"
    assert calls == []  # sysctl only on macOS
    assert env.cpu_arch() == "arm64"


def test_windows_flags_come_from_torch_in_linux_spelling(monkeypatch, tmp_path):
    caps = {"avx2": True, "avx512_f": True, "avx512_vnni": True, "amx_bf16": False}
    caps |= {"fma3": True, "cpu_name": "Intel Xeon Platinum 8488C", "l1d_cache_size": 49152}
    fake_platform(
        monkeypatch,
        tmp_path,
        system="Windows",
        machine="AMD64",
        processor="Intel64 Family 6 Model 143 Stepping 8, GenuineIntel",
        caps=caps,
    )
    assert env.cpu_flags() == {"avx2", "avx512f", "avx512_vnni", "fma"}
    assert env.cpu_model() == "Intel Xeon Platinum 8488C"
    assert env.cpu_arch() == "x86_64"


@pytest.mark.parametrize(
    "machine, arch",
    [("x86_64", "x86_64"), ("AMD64", "x86_64"), ("i686", "x86"), ("aarch64", "arm64")]
    + [("arm64", "arm64"), ("ppc64le", "ppc64le"), (" RISCV64 ", "riscv64")],
)
def test_cpu_arch_gives_one_name_per_architecture(machine, arch):
    assert env.cpu_arch(machine) == arch


def test_cpu_arch_asks_torch_where_the_platform_is_silent(monkeypatch, tmp_path):
    fake_platform(monkeypatch, tmp_path, system="", machine="", caps={"architecture": "aarch64"})
    assert env.cpu_arch() == "arm64"
    fake_platform(monkeypatch, tmp_path, system="", machine="")
    assert env.cpu_arch() == "unknown"
    with pytest.raises(TypeError, match="cpu_arch: machine"):
        env.cpu_arch(64)


def test_darwin_brand_is_none_off_macos_and_when_sysctl_fails(monkeypatch):
    monkeypatch.setattr(env_cpu.platform, "system", lambda: "Linux")
    assert env_cpu._darwin_brand() is None
    monkeypatch.setattr(env_cpu.platform, "system", lambda: "Darwin")

    def missing(*a, **kw):
        raise FileNotFoundError("sysctl")

    monkeypatch.setattr(env_cpu.subprocess, "run", missing)
    assert env_cpu._darwin_brand() is None


def test_torch_capabilities_is_a_plain_dict_of_this_torch():
    caps = env_cpu._torch_capabilities()
    assert isinstance(caps, dict) and caps == dict(torch.cpu.get_capabilities())


def test_mps_named_on_the_card_but_not_its_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert env.mps_available()
    card = env.environment_card()
    assert card.device == "cpu" and card.gpu.startswith("Apple MPS (not used")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert not env.mps_available() and env.environment_card().gpu == "none"


@pytest.mark.parametrize(
    "flags, expected",
    [
        ({"avx512_bf16"}, r"^native \(avx512_bf16\)$"),
        ({"amx_bf16", "avx512_bf16"}, r"^native \(avx512_bf16, amx_bf16\)$"),
        ({"avx2"}, r"^emulated"),
        (set(), r"^emulated"),
    ],
)
def test_bf16_support_on_cpu(flags, expected):
    assert re.search(expected, env.bf16_support("cpu", flags=frozenset(flags)))


def test_bf16_support_rejects_other_devices():
    with pytest.raises(ValueError, match="expected a 'cpu' or 'cuda' device"):
        env.bf16_support("meta")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA answer")
def test_bf16_support_without_cuda():
    assert env.bf16_support("cuda") == "not supported (no CUDA device)"


def test_sanitize_file_masks_machine_lines_only():
    from pathlib import Path

    cfg = (Path(__file__).resolve().parent.parent / "nbval_sanitize.cfg").read_text()
    pairs = re.findall(r"^regex: (.*)$\n^replace: (.*)$", cfg, flags=re.M)
    text = str(env.environment_card())
    for regex, repl in pairs:
        text = re.sub(regex, repl, text)
    version = torch.__version__.partition("+")[0]
    assert f"  torch    {version} (build <local>)" in text.splitlines()
    for key in ("python", "device", "cpu", "threads", "cuda", "cudnn", "gpu", "bf16"):
        assert f"  {key} <machine>" in text.splitlines()


def test_native_bf16_follows_env_card():
    assert env.native_bf16("cpu") == env.bf16_support("cpu").startswith("native")
    with pytest.raises(ValueError, match="expected a 'cpu' or 'cuda' device"):
        env.native_bf16("meta")


def test_autocast_dtypes():
    assert env.autocast_dtypes("cpu") == [torch.bfloat16]
    with pytest.raises(ValueError, match="expected a 'cpu' or 'cuda' device"):
        env.autocast_dtypes("meta")
    if torch.cuda.is_available():
        assert env.autocast_dtypes("cuda")[0] == torch.float16
    else:
        with pytest.raises(ValueError, match="CUDA requested"):
            env.autocast_dtypes("cuda")


# --- bf16 / hardware capability (chapter 04)


def test_cpu_bf16_flags_follow_torch_capabilities():
    flags = env.cpu_bf16_flags()
    assert flags <= {"avx512_bf16", "amx_bf16", "bf16"}
    caps = torch.cpu.get_capabilities()
    for f in ("avx512_bf16", "amx_bf16"):
        assert (f in flags) == (caps.get(f) is True)
    assert env.native_bf16("cpu") == bool(flags)


def test_arm_bf16_counts_as_native():
    assert env.bf16_support("cpu", flags=frozenset({"bf16"})) == "native (bf16)"


@pytest.mark.parametrize(
    "flags, tail",
    [
        (frozenset({"avx512_bf16"}), "avx512_bf16 yes, amx_bf16 no -> bfloat16 native"),
        (
            frozenset({"avx512_bf16", "amx_bf16"}),
            "avx512_bf16 yes, amx_bf16 yes -> bfloat16 native",
        ),
        (frozenset(), "avx512_bf16 no, amx_bf16 no -> bfloat16 emulated"),
        (frozenset({"bf16"}), "avx512_bf16 no, amx_bf16 no, arm bf16 yes -> bfloat16 native"),
    ],
)
def test_hardware_line_on_cpu(flags, tail):
    line = env.hardware_line("cpu", flags=flags)
    assert line == f"cpu: {torch.backends.cpu.get_cpu_capability()} kernels, {tail}"
    assert "\n" not in line and len("[hardware] " + line) < 100


def test_hardware_line_default_matches_native_autocast():
    assert env.hardware_line("cpu").endswith("native" if env.native_autocast("cpu") else "emulated")
    assert env.native_autocast("cpu") == env.native_bf16("cpu")


def fake_gpu(monkeypatch, capability, bf16):
    """CUDA present, with a compute capability and native bfloat16 or not (no GPU needed)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: bf16)


@pytest.mark.parametrize(
    "capability, bf16, timed, native",
    [
        ((9, 0), True, torch.bfloat16, True),
        ((7, 5), False, torch.float16, True),  # a T4: float16 tensor cores, no native bfloat16
        ((6, 1), False, torch.float16, False),
        # issue 33: the page times the last dtype; a device whose float16 is not native but whose
        # bfloat16 is must be judged by bfloat16 (the first dtype said False here)
        ((6, 1), True, torch.bfloat16, True),
    ],
)
def test_native_autocast_judges_the_timed_dtype(monkeypatch, capability, bf16, timed, native):
    fake_gpu(monkeypatch, capability, bf16)
    assert env.autocast_dtypes("cuda")[-1] == timed  # what chapter 04 times (amp_dtype)
    assert env.native_autocast("cuda") is native
    assert env.native_autocast("cuda", torch.float16) is (capability >= (7, 0))
    if bf16:
        assert env.native_autocast("cuda", torch.bfloat16) is True


def test_native_autocast_dtype_errors(monkeypatch):
    with pytest.raises(ValueError, match=r"float16 is not an autocast dtype of cpu \(those are"):
        env.native_autocast("cpu", torch.float16)
    with pytest.raises(TypeError, match="^native_autocast: dtype must be"):
        env.native_autocast("cpu", "bfloat16")
    fake_gpu(monkeypatch, (7, 5), False)
    with pytest.raises(ValueError, match=r"bfloat16 is not an autocast dtype of cuda"):
        env.native_autocast("cuda", torch.bfloat16)


def test_native_autocast_and_hardware_line_errors():
    for fn in (env.native_autocast, env.hardware_line):
        with pytest.raises(ValueError, match="expected a 'cpu' or 'cuda' device"):
            fn("meta")
        if not torch.cuda.is_available():
            with pytest.raises(ValueError, match="CUDA requested"):
                fn("cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_hardware_line_on_cuda():
    line = env.hardware_line("cuda")
    assert line.startswith("cuda: ") and "compute capability" in line
    assert env.native_autocast("cuda") == (torch.cuda.get_device_capability() >= (7, 0))
