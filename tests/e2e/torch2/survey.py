#!/usr/bin/env python3
"""The whole torch 2.x picture in two tables, for docs/exporting-from-pytorch.md
and the lead.

First, what each export does to every model of models.py: initializers in
the graph, how many are float, how many of torch's parameter tensors survive
under one of their torch names, and the float initializers torch does not
have (merged or folded copies, masks, scales). The legacy TorchScript
exporter (opset 17, default constant folding) is measured too. Then every
parity case of parity.py (all models x dynamo/noopt/helper x world sizes 1
and 2), one PASS/FAIL row each with its first problem. Exit status is the
parity table's.

  .venv/bin/python tests/e2e/torch2/survey.py --fsdp-opt build/bin/fsdp-opt \\
      --fsdp-run build/bin/fsdp-run [--keep DIR] [--stats-only]
"""

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import exports  # noqa: E402
import models  # noqa: E402
import parity  # noqa: E402


def export_table():
    print(f"{'model':<12} {'export':<7} {'inits':>5} {'float':>5} {'torch params kept':>17}  "
          f"float initializers torch lacks")
    with tempfile.TemporaryDirectory() as tmp:
        for name in models.MODELS:
            for mode in exports.MODES + ("legacy",):
                model = models.build(name)
                path = os.path.join(tmp, f"{name}-{mode}.onnx")
                try:
                    exports.export(model, models.example_inputs(), mode, path)
                except Exception as e:  # report and go on: this is a survey
                    print(f"{name:<12} {mode:<7} export failed: {str(e).splitlines()[0][:100]}")
                    continue
                s = exports.graph_stats(model, path)
                strays = ", ".join(s["strays"][:6]) + (" ..." if len(s["strays"]) > 6 else "")
                print(f"{name:<12} {mode:<7} {s['initializers']:>5} {s['float']:>5} "
                      f"{s['named']:>8} of {s['parameters']:<6}  {len(s['strays'])}: {strays}",
                      flush=True)


def main():
    p = parity.parser()
    p.add_argument("--stats-only", action="store_true", help="print only the export table")
    args = p.parse_args()
    export_table()
    if args.stats_only:
        return 0
    print()
    return parity.run_cases(args, parity.all_cases())


if __name__ == "__main__":
    sys.exit(main())
