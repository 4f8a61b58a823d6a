// A weight read twice gets two partial gradients, summed before the
// optimizer reads the sum. All three are the weight's gradient, not
// activations: the report's categories follow a gradient back through the
// Add that assembles it. The arena peaks at that Add with the three 1 KiB
// gradients live and no activation, and the largest-tensors table names
// them with the instructions they live over.

// RUN: fsdp-opt %s --emit=report | FileCheck %s
// CHECK: rank  parameters  gradients  optimizer state  activations
// CHECK-NEXT: 0    1.00 KiB   3.00 KiB         2.00 KiB          0 B
// CHECK: largest arena tensors live at the peak (instruction [[PEAK:[0-9]+]]):
// CHECK-NEXT: tensor {{ *}}kind {{ *}}bytes {{ *}}live over
// CHECK-NEXT: {{.*}}emit-report-gradients.mlir:{{[0-9]+}}  gradient  1.00 KiB {{ *[0-9]+}}..[[PEAK]]
// CHECK-NEXT: {{.*}}emit-report-gradients.mlir:{{[0-9]+}}  gradient  1.00 KiB {{ *[0-9]+}}..[[PEAK]]
// CHECK-NEXT: {{.*}}emit-report-gradients.mlir:{{[0-9]+}}  gradient  1.00 KiB {{ *}}[[PEAK]]..{{[0-9]+}}

// RUN: fsdp-opt %s --emit=report --report-format=json | FileCheck %s --check-prefix=JSON
// JSON: "largest_at_peak": [
// JSON-NEXT: {"name": "{{.*}}", "bytes": 1024, "category": "gradient", "first_instruction": {{[0-9]+}}, "last_instruction": {{[0-9]+}}},
// JSON-NEXT: {"name": "{{.*}}", "bytes": 1024, "category": "gradient",
// JSON-NEXT: {"name": "{{.*}}", "bytes": 1024, "category": "gradient",
// JSON-NEXT: ],

module {
  func.func @forward(%w: tensor<16x16xf32> {nn.param = "fc.weight"},
                     %x: tensor<2x16xf32> {nn.input = "x"}, %l: tensor<2xi64> {nn.input = "labels"})
      -> (tensor<f32> {nn.output = "loss"}) {
    %h = nn.gemm %x, %w {trans_b = true} : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %y = nn.gemm %h, %w {trans_b = true} : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32>
    %loss, %lp = nn.softmax_cross_entropy %y, %l {reduction = "mean"} : (tensor<2x16xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x16xf32>)
    return %loss : tensor<f32>
  }
}
