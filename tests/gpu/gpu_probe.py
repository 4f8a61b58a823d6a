#!/usr/bin/python3
# Which NVIDIA GPUs this machine has, asked of the driver itself (libcuda's
# cuInit / cuDeviceGetCount / cuDeviceGetName / cuDeviceTotalMem through
# ctypes), independently of fsdp-run: the GPU suite (test_device_parity.py)
# uses it to tell "no GPU here" (skip) from "fsdp-run cannot use the GPU
# that is here" (fail), and bench/gpu_step.py to refuse to print numbers
# without a GPU and to pick the peak-FLOPS row by the GPU's name.

import ctypes


def gpus():
    """([(name, total bytes)] of the GPUs the driver sees, why there are
    none: '' when there are some)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return [], f"no NVIDIA driver ({e})"
    status = cuda.cuInit(0)
    if status != 0:
        text = ctypes.c_char_p()
        cuda.cuGetErrorString(status, ctypes.byref(text))
        return [], f"cuInit: {(text.value or b'error %d' % status).decode()}"
    count = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return [], "cuDeviceGetCount failed"
    found = []
    for ordinal in range(count.value):
        device = ctypes.c_int(0)
        name = ctypes.create_string_buffer(256)
        total = ctypes.c_size_t(0)
        if cuda.cuDeviceGet(ctypes.byref(device), ordinal) != 0:
            continue
        cuda.cuDeviceGetName(name, len(name), device)
        cuda.cuDeviceTotalMem_v2(ctypes.byref(total), device)
        found.append((name.value.decode(errors="replace"), total.value))
    return found, "" if found else "the driver sees no GPU"


if __name__ == "__main__":
    found, why = gpus()
    for index, (name, total) in enumerate(found):
        print(f"GPU {index}: {name}, {total / 2**30:.1f} GiB")
    if not found:
        print(f"no GPU: {why}")
