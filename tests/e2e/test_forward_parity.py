#!/usr/bin/python3
# Forward parity with PyTorch: exports the three model families (GPT-style
# decoder, torch.nn.Transformer, MLP; opsets 14 and 17, TRAINING and EVAL)
# together with a batch and torch's loss on it, compiles each with
# `fsdp-opt --mode=forward`, runs the plan with `fsdp-run` on the same batch
# and requires the loss to match torch's within 1e-5 relative (docs/design.md's
# numerics contract). Dropout that is active in training draws torch's own
# random mask, so those variants have no reference and are reported as
# skipped. Ends with an "N passed, M failed" line.

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT = os.path.join(HERE, "..", "models", "export_models.py")
TOLERANCE = 1e-5


def run_model(args, tmp, entry):
    model = os.path.join(tmp, entry["file"])
    stem = os.path.splitext(model)[0]
    plan = stem + ".plan"
    compile_ = subprocess.run([args.fsdp_opt, model, "--mode=forward", "-o", plan],
                              capture_output=True, text=True)
    if compile_.returncode != 0:
        return None, "compile failed: " + compile_.stderr.strip()
    outputs = stem + "-outputs"
    command = [args.fsdp_run, plan, f"--outputs={outputs}"]
    command += [f"--input={name}={os.path.join(tmp, f)}" for name, f in entry["input_files"].items()]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        return None, "run failed: " + run.stderr.strip()
    return float(numpy.load(os.path.join(outputs, "loss.npy"))), None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("--fsdp-run", required=True)
    args = parser.parse_args()
    passed = failed = skipped = 0
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, EXPORT, tmp], check=True, stdout=subprocess.DEVNULL)
        manifest = json.load(open(os.path.join(tmp, "manifest.json")))
        for entry in manifest["models"]:
            expected = entry["torch_loss"]
            if expected is None:
                print(f"SKIP: {entry['file']}: training-mode dropout is random in torch")
                skipped += 1
                continue
            loss, problem = run_model(args, tmp, entry)
            if problem is None and abs(loss - expected) > TOLERANCE * abs(expected):
                problem = f"loss {loss!r}, torch {expected!r}"
            if problem is None:
                print(f"PASS: {entry['file']}: loss {loss!r} (torch {expected!r}, "
                      f"rel diff {abs(loss - expected) / abs(expected):.2e})")
                passed += 1
            else:
                print(f"FAIL: {entry['file']}: {problem}")
                failed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
