// A compiled step's module (compiler/Target/StepObject.h) for a step with a
// Fused chain: fsdp_embedded_step in runtime/embed/EmbeddedStep.h's layout,
// pointing at the plan (64-byte aligned), --help's text, the PTX modules
// and the table of generated Fused functions. This step has no parameters,
// so it names no weights file.

// RUN: fsdp-opt %s --emit=llvm --mode=forward | FileCheck %s
// The chain exp(x) * 0.5 + 1 as native code (compiler/Target/FusedCodegen.h):
// 8 lanes for x86-64-v3 (AVX2), 16 for x86-64-v4 (AVX-512); the broadcast
// constants are loaded once and splatted, fastExp's clamp comes first, and
// both results are stored as vectors.
// CHECK: llvm.func @fsdp_fused_[[KEY:[0-9a-f]+]]_avx2({{.*}}target_cpu = "x86-64-v3"
// CHECK: llvm.load {{.*}} -> vector<8xf32>
// CHECK: llvm.shufflevector {{.*}} [0, 0, 0, 0, 0, 0, 0, 0] : vector<8xf32>
// CHECK: llvm.mlir.constant(dense<88.7228394> : vector<8xf32>)
// CHECK: llvm.fmul {{.*}} : vector<8xf32>
// CHECK: llvm.store {{.*}} : vector<8xf32>, !llvm.ptr
// CHECK: llvm.store {{.*}} : vector<8xf32>, !llvm.ptr
// The scalar tail: the same ops on f32.
// CHECK: llvm.store {{.*}} : f32, !llvm.ptr
// CHECK: llvm.func @fsdp_fused_[[KEY]]_avx512({{.*}}target_cpu = "x86-64-v4"
// CHECK: llvm.load {{.*}} -> vector<16xf32>
// CHECK: llvm.mlir.global internal constant @fsdp_step_plan("{{.*}}") {addr_space = 0 : i32, alignment = 64 : i64}{{$}}
// CHECK-NOT: @fsdp_step_weights_file
// CHECK: llvm.mlir.global internal constant @fsdp_step_info("Compiled by fsdp-opt from {{.*}}step-object.mlir (content hash {{[0-9a-f]+}}): forward step, world size 1, unsharded, --ckpt=none; planned peak per rank {{[0-9]+}} B ({{[0-9]+}} MiB).\00")
// CHECK: llvm.mlir.global internal constant @fsdp_step_ptx_sm80("{{.*}}.target sm_80{{.*}}.visible .entry fsdp_fused_[[KEY]](
// CHECK: llvm.mlir.global internal constant @fsdp_step_ptx_sm90("{{.*}}.target sm_90{{.*}}.visible .entry fsdp_fused_[[KEY]](
// CHECK: llvm.mlir.global internal constant @fsdp_step_ptx_entry_0("fsdp_fused_[[KEY]]\00")
// CHECK: llvm.mlir.global internal constant @fsdp_step_fused() {{.*}} : !llvm.array<1 x struct<"FsdpGeneratedFused", (i64, ptr, ptr, ptr)>>
// CHECK: llvm.mlir.addressof @fsdp_fused_[[KEY]]_avx2
// CHECK: llvm.mlir.addressof @fsdp_fused_[[KEY]]_avx512
// CHECK: llvm.mlir.addressof @fsdp_step_ptx_entry_0
// CHECK: llvm.mlir.global external constant @fsdp_embedded_step() {{.*}} : !llvm.struct<"FsdpEmbeddedStep", (i32, ptr, i64, i64, ptr, i64, ptr, ptr, ptr, ptr, ptr, i32)>
// CHECK-NEXT: %[[ABI:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: %[[PLANPTR:.*]] = llvm.mlir.addressof @fsdp_step_plan : !llvm.ptr
// CHECK-NEXT: %[[SIZE:.*]] = llvm.mlir.constant({{[1-9][0-9]*}} : i64) : i64
// CHECK-NEXT: llvm.mlir.constant({{-?[0-9]+}} : i64) : i64
// CHECK-NEXT: llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: llvm.mlir.constant(0 : i64) : i64
// CHECK-NEXT: llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: llvm.mlir.addressof @fsdp_step_info : !llvm.ptr
// CHECK-NEXT: llvm.mlir.addressof @fsdp_step_ptx_sm80 : !llvm.ptr
// CHECK-NEXT: llvm.mlir.addressof @fsdp_step_ptx_sm90 : !llvm.ptr
// CHECK-NEXT: llvm.mlir.addressof @fsdp_step_fused : !llvm.ptr
// CHECK-NEXT: llvm.mlir.constant(1 : i32) : i32
// CHECK: llvm.return
// Only --emit=binary defines main.
// CHECK-NOT: llvm.func @main

// The same as LLVM IR, with named struct types and the constant step.
// RUN: fsdp-opt %s --emit=llvm-ir --mode=forward | FileCheck %s --check-prefix=IR
// IR: target triple = "x86_64-unknown-linux-gnu"
// IR: %FsdpGeneratedFused = type { i64, ptr, ptr, ptr }
// IR: %FsdpEmbeddedStep = type { i32, ptr, i64, i64, ptr, i64, ptr, ptr, ptr, ptr, ptr, i32 }
// IR: @fsdp_step_plan = internal constant [[[PLAN:[0-9]+]] x i8] c"{{.*}}", align 64
// IR: @fsdp_step_fused = internal constant [1 x %FsdpGeneratedFused] [%FsdpGeneratedFused { i64 {{-?[0-9]+}}, ptr @[[FN:fsdp_fused_[0-9a-f]+]]_avx2, ptr @[[FN]]_avx512, ptr @fsdp_step_ptx_entry_0 }]
// IR: @fsdp_embedded_step = constant %FsdpEmbeddedStep { i32 1, ptr @fsdp_step_plan, i64 [[PLAN]], i64 {{-?[0-9]+}}, ptr null, i64 0, ptr null, ptr @fsdp_step_info, ptr @fsdp_step_ptx_sm80, ptr @fsdp_step_ptx_sm90, ptr @fsdp_step_fused, i32 1 }, align 8
// No fast-math flag and no fused multiply-add: the runtime's bits.
// IR: define void @[[FN]]_avx2(ptr %0, ptr %1, i64 %2, i64 %3) [[ATTRS:#[0-9]+]]
// IR-NOT: fast
// IR-NOT: fmuladd
// IR: fmul <8 x float>
// IR: define void @[[FN]]_avx512(
// IR: fmul <16 x float>
// IR-NOT: define void @main

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
