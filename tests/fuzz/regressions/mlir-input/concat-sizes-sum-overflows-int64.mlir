func.func @forward(%arg0: tensor<0x6917529027641081856xf32>) -> tensor<0x7xf32> {
  %0 = nn.concat %arg0, %arg0 {axis = 1 : i64} : (tensor<0x6917529027641081856xf32>, tensor<0x6917529027641081856xf32>) -> tensor<0x7xf32>
  return %0 : tensor<0x7xf32>
}
