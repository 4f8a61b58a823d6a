// A 1-D lhs times a transposed 2-D weight (x @ W^T with x a vector).
module {
  func.func @forward(%x: tensor<3xf32> {nn.input = "x"}, %w: tensor<4x3xf32> {nn.input = "w"}) -> (tensor<4xf32> {nn.output = "y"}) {
    %wt = nn.transpose %w {perm = array<i64: 1, 0>} : tensor<4x3xf32> to tensor<3x4xf32>
    %y = nn.matmul %x, %wt : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}
