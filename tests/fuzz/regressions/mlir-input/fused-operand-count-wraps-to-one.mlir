func.func @forward(%x: tensor<4xf32>, %b: tensor<7x7905747460161236407xf32>) -> tensor<4xf32> {
  %0 = nn.fused %x, %b {program = array<i64: 0, 0, 1>, results_of = array<i64: 2>} : (tensor<4xf32>, tensor<7x7905747460161236407xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
