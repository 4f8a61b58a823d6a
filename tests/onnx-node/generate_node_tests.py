"""Writes ONNX's own node test cases at default-domain opsets >= 18 as test data.

The onnx wheel from PyPI ships no node-test data directory, only the Python
case definitions (onnx.backend.test.case.node) that ONNX's own
`backend-test-tools generate-data` turns into model.onnx plus
test_data_set_N/{input,output}_N.pb. This script runs those definitions with
the installed onnx and keeps the cases whose model imports the default
domain at opset 18 or later: the population the 1.23 node conformance suite
measures (Debian's libonnx-testdata already covers opsets <= 17). numpy's
generator is seeded, so the data is the same on every run; a stamp file
names the onnx version and the case count so CMake and the test can tell the
directory is complete.

Usage: python generate_node_tests.py OUTPUT_DIR
"""

import os
import shutil
import sys
import warnings

import numpy as np

MIN_OPSET = 18


def default_opset(model):
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx"):
            return opset.version
    return 0


def to_proto(value, value_info):
    """The serialized proto of one input or output, chosen by its declared type."""
    from onnx import TensorProto, numpy_helper

    kind = value_info.type.WhichOneof("value")
    if kind == "sequence_type":
        return numpy_helper.from_list(value, value_info.name)
    if kind == "optional_type":
        return numpy_helper.from_optional(value, value_info.name)
    if kind == "map_type":
        return numpy_helper.from_dict(value, value_info.name)
    if isinstance(value, TensorProto):
        return value
    return numpy_helper.from_array(np.asarray(value), value_info.name)


def write_case(case, directory):
    os.makedirs(directory)
    with open(os.path.join(directory, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for index, (inputs, outputs) in enumerate(case.data_sets):
        data_dir = os.path.join(directory, f"test_data_set_{index}")
        os.makedirs(data_dir)
        for kind, values, infos in (("input", inputs, graph.input),
                                    ("output", outputs, graph.output)):
            for j, value in enumerate(values):
                with open(os.path.join(data_dir, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(to_proto(value, infos[j]).SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: generate_node_tests.py OUTPUT_DIR")
    output = sys.argv[1]
    np.random.seed(0)
    warnings.simplefilter("ignore")  # cases that overflow on purpose warn
    import onnx
    import onnx.backend.test.case.node as node_cases

    cases = [c for c in node_cases.collect_testcases(None)
             if c.kind == "node" and c.model is not None
             and default_opset(c.model) >= MIN_OPSET]
    if os.path.exists(output):
        shutil.rmtree(output)
    os.makedirs(output)
    for case in cases:
        write_case(case, os.path.join(output, case.name))
    with open(os.path.join(output, "STAMP"), "w") as f:
        f.write(f"onnx {onnx.__version__} node tests at opset >= {MIN_OPSET}: {len(cases)}\n")
    print(f"wrote {len(cases)} onnx {onnx.__version__} node tests to {output}")


if __name__ == "__main__":
    main()
