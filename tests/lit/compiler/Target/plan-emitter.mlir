// The plan emitter places every value and lowers every op to a kernel:
// arguments and returned values in the persistent region, constants in the
// plan's constant data, other results in the arena where buffers whose
// lifetimes do not overlap share offsets; an argument returned directly is
// copied into its own output buffer; optional operands print as `none`.

// RUN: fsdp-opt %s --emit=plan --mode=forward -o %t.plan
// RUN: fsdp-run %t.plan --dump | FileCheck %s

// CHECK: plan version=4 mode=forward world_size=1
// CHECK: memory persistent=256 arena=192 constant=12
// CHECK-NOT: weights
// CHECK: buffer %0 f32[2, 4] persistent+0 size=32 "x"
// CHECK: buffer %1 f32[4, 3] persistent+64 size=48 "w"
// CHECK: buffer %2 f32[2, 3] arena+0 size=24
// CHECK: buffer %3 f32[3] constant+0 size=12 "constant"
// CHECK: buffer %4 f32[2, 3] arena+64 size=24
// CHECK: buffer %5 f32[2, 3] persistent+128 size=24 "y"
// CHECK: buffer %6 f32[2, 1] arena+0 size=8
// CHECK: buffer %7 f32[2, 1] arena+128 size=8
// CHECK: buffer %8 f32[2, 4] persistent+192 size=32 "echo"
// CHECK: inst 0 Gemm [%0, %1, none] -> [%2] ints=[0, 0] floats=[1, 1]
// CHECK: inst 1 Add [%2, %3] -> [%4]
// CHECK: inst 2 LayerNorm [%4, %3, none] -> [%5, %6, %7] ints=[1] floats=[1e-05]
// CHECK: inst 3 Copy [%0] -> [%8]
// CHECK: input "x" %0
// CHECK: input "w" %1
// CHECK: output "y" %5
// CHECK: output "echo" %8

module {
  func.func @forward(%x: tensor<2x4xf32> {nn.input = "x"}, %w: tensor<4x3xf32> {nn.input = "w"})
      -> (tensor<2x3xf32> {nn.output = "y"}, tensor<2x4xf32> {nn.output = "echo"}) {
    %0 = nn.gemm %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %b = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    %1 = nn.add %0, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %y, %mean, %inv = nn.layer_norm %1, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32}
        : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
    return %y, %x : tensor<2x3xf32>, tensor<2x4xf32>
  }
}


// The driver reports what the plan will take, before launch.
// RUN: fsdp-opt %s --emit=plan --mode=forward -o %t.again.plan | FileCheck %s --check-prefix=SUMMARY
// SUMMARY: wrote {{.+}}.again.plan: 4 instructions, 9 buffers; persistent 256 B, arena 192 B (live peak 192 B), constants 12 B{{$}}
