// A forward plan of elementwise kernels only (mul, broadcast add, tanh),
// for the devices' tests: z = tanh(x * x + y).
module {
  func.func @forward(%x: tensor<3x5xf32> {nn.input = "x"}, %y: tensor<5xf32> {nn.input = "y"})
      -> (tensor<3x5xf32> {nn.output = "z"}) {
    %0 = nn.mul %x, %x : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    %1 = nn.add %0, %y : (tensor<3x5xf32>, tensor<5xf32>) -> tensor<3x5xf32>
    %2 = nn.tanh %1 : tensor<3x5xf32>
    return %2 : tensor<3x5xf32>
  }
}
