// A compiled step's module (compiler/Target/StepObject.h) for a step with a
// Fused chain: fsdp_embedded_step in runtime/embed/EmbeddedStep.h's layout,
// pointing at the plan (64-byte aligned), --help's text and the table of
// generated Fused functions (empty until their code generator lands).
// This step has no parameters, so it names no weights file.

// RUN: fsdp-opt %s --emit=llvm --mode=forward | FileCheck %s
// CHECK: llvm.mlir.global internal constant @fsdp_step_plan("{{.*}}") {addr_space = 0 : i32, alignment = 64 : i64}{{$}}
// CHECK-NOT: @fsdp_step_weights_file
// CHECK: llvm.mlir.global internal constant @fsdp_step_info("Compiled by fsdp-opt from {{.*}}step-object.mlir (content hash {{[0-9a-f]+}}): forward step, world size 1, unsharded, --ckpt=none; planned peak per rank {{[0-9]+}} B ({{[0-9]+}} MiB).\00")
// CHECK: llvm.mlir.global internal constant @fsdp_step_fused() {{.*}} : !llvm.array<0 x struct<"FsdpGeneratedFused", (i64, ptr, ptr, ptr)>>
// CHECK: llvm.mlir.global external constant @fsdp_embedded_step() {{.*}} : !llvm.struct<"FsdpEmbeddedStep", (i32, ptr, i64, i64, ptr, i64, ptr, ptr, ptr, ptr, ptr, i32)>
// CHECK-NEXT: %[[ABI:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[PLANPTR:.*]] = llvm.mlir.addressof @fsdp_step_plan : !llvm.ptr
// CHECK-NEXT: %[[SIZE:.*]] = llvm.mlir.constant({{[1-9][0-9]*}} : i64) : i64
// CHECK-NEXT: llvm.mlir.constant({{-?[0-9]+}} : i64) : i64
// CHECK-NEXT: llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: llvm.mlir.constant(0 : i64) : i64
// CHECK-NEXT: llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: llvm.mlir.addressof @fsdp_step_info : !llvm.ptr
// CHECK-NEXT: llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: llvm.mlir.addressof @fsdp_step_fused : !llvm.ptr
// CHECK-NEXT: llvm.mlir.constant(0 : i32) : i32
// CHECK: llvm.return
// Only --emit=binary defines main.
// CHECK-NOT: llvm.func @main

// The same as LLVM IR, with named struct types and the constant step.
// RUN: fsdp-opt %s --emit=llvm-ir --mode=forward | FileCheck %s --check-prefix=IR
// IR: target triple = "x86_64-unknown-linux-gnu"
// IR: %FsdpGeneratedFused = type { i64, ptr, ptr, ptr }
// IR: %FsdpEmbeddedStep = type { i32, ptr, i64, i64, ptr, i64, ptr, ptr, ptr, ptr, ptr, i32 }
// IR: @fsdp_step_plan = internal constant [[[PLAN:[0-9]+]] x i8] c"{{.*}}", align 64
// IR: @fsdp_step_fused = internal constant [0 x %FsdpGeneratedFused]
// IR: @fsdp_embedded_step = constant %FsdpEmbeddedStep { i32 1, ptr @fsdp_step_plan, i64 [[PLAN]], i64 {{-?[0-9]+}}, ptr null, i64 0, ptr null, ptr @fsdp_step_info, ptr null, ptr null, ptr @fsdp_step_fused, i32 0 }, align 8
// IR-NOT: define

// The plan carries the Fused chain the table's entries are keyed by.
// RUN: fsdp-opt %s --emit=plan --mode=forward -o %t.plan
// RUN: fsdp-run %t.plan --dump | FileCheck %s --check-prefix=DUMP
// DUMP: inst 0 Fused

module {
  func.func @forward(%x: tensor<2x3xf32> {nn.input = "x"}) -> (tensor<2x3xf32> {nn.output = "e"}, tensor<2x3xf32> {nn.output = "y"}) {
    %half = nn.constant dense<0.5> : tensor<f32>
    %one = nn.constant dense<1.0> : tensor<f32>
    %e = nn.exp %x : tensor<2x3xf32>
    %m = nn.mul %e, %half : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    %y = nn.add %m, %one : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    return %e, %y : tensor<2x3xf32>, tensor<2x3xf32>
  }
}
