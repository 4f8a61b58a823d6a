// MLIR 19's parser builds a dense i1 array written with integer literals
// (also with the width spelt i01) without storage, and printing it, as a
// verifier's diagnostic does, reads a null pointer (the mlir-input fuzz
// target found it): fsdp-opt refuses that text before parsing, in both its
// compile and its mlir-opt paths, naming the file and line
// (tools/fsdp-opt/MlirInputGuard.h). true/false literals parse soundly.
// RUN: not fsdp-opt %s 2>&1 | FileCheck %s
// RUN: not fsdp-opt %s --world-size=2 --shard=full --emit=report 2>&1 | FileCheck %s
// RUN: not fsdp-opt - < %s 2>&1 | FileCheck %s --check-prefix=STDIN
// CHECK: fsdp-opt: error: {{.*}}mlir-parser-guard.mlir: line [[@LINE+4]]: a bool array written with integer literals ({{.*}}) is not accepted: MLIR 19's parser mishandles it; write true/false
// STDIN: fsdp-opt: error: -: line [[@LINE+3]]: a bool array
func.func @forward(%x: tensor<8xf32> {nn.input = "x"}) -> (tensor<8xf32> {nn.output = "y"}) {
  // The crash's shape: an all_reduce whose groups attribute is misnamed.
  %0 = fsdp.all_reduce %x {groupz = array<i01: 0, 0>, group_size = 1, reduction = "sum"} : tensor<8xf32>
  return %0 : tensor<8xf32>
}
