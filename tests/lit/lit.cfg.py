# lit configuration for fsdp-opt. Tests mirror the code: dialects/,
# frontends/, tools/ ... `%python` is Debian's /usr/bin/python3 (with onnx
# and torch), used by tests that build small ONNX models at test time.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "fsdp-opt"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fsdp_obj_root, "tests", "lit")

config.substitutions.append(("%python", "/usr/bin/python3"))
config.substitutions.append(("%fsdp_src", config.fsdp_src_root))
config.substitutions.append(("%onnx_inputs", os.path.join(config.test_source_root, "frontends", "onnx", "Inputs")))

# Features of the CUDA device's tests: `cuda-build` when fsdp-run has the
# cuda device, `gpu` when the NVIDIA kernel driver lists a GPU (a cheap
# look that needs no CUDA; tests without a GPU are UNSUPPORTED: gpu).
if str(getattr(config, "fsdp_enable_cuda", "")).upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("cuda-build")
_gpus = "/proc/driver/nvidia/gpus"
if os.path.isdir(_gpus) and os.listdir(_gpus):
    config.available_features.add("gpu")

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
llvm_config.add_tool_substitutions(["fsdp-opt", "fsdp-run", "fsdp-ckpt"], [config.fsdp_tools_dir])
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
