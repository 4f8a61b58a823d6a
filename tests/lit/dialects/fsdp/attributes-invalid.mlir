// RUN: fsdp-opt %s --split-input-file --verify-diagnostics

// One case per rule of dialects/fsdp/Attributes.cpp: every `fsdp.`
// attribute is one the dialect defines, in the place it belongs, with the
// value the passes and the plan emitter expect.

// An fsdp attribute the dialect does not define (a misspelling the
// passes would silently ignore) is an error, on an op ...
func.func @unknown_on_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown fsdp attribute 'fsdp.xyz'}}
  %0 = nn.neg %x {fsdp.xyz = 1} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// ... on an argument ...
// expected-error @+1 {{unknown fsdp attribute 'fsdp.units'}}
func.func @unknown_on_argument(%x: tensor<4xf32> {fsdp.units}) {
  return
}

// -----

// ... and on a result.
// expected-error @+1 {{unknown fsdp attribute 'fsdp.output'}}
func.func @unknown_on_result(%x: tensor<4xf32>) -> (tensor<4xf32> {fsdp.output = "y"}) {
  return %x : tensor<4xf32>
}

// -----

// No fsdp attribute belongs on a function result.
// expected-error @+1 {{'fsdp.host' belongs on a function argument, not on a function result}}
func.func @host_on_result(%x: tensor<4xf32>) -> (tensor<4xf32> {fsdp.host}) {
  return %x : tensor<4xf32>
}

// -----

// Argument attributes do not belong on ops.
// expected-error @+1 {{'fsdp.unit' belongs on a function argument, not on 'builtin.module'}}
module attributes {fsdp.unit = {name = "u"}} {
}

// -----

// The module's attributes do not belong on arguments ...
// expected-error @+1 {{'fsdp.world_size' belongs on the module, not on a function argument}}
func.func @world_size_on_argument(%x: tensor<4xf32> {fsdp.world_size = 2 : i64}) {
  return
}

// -----

// ... nor on other ops.
// expected-error @+1 {{'fsdp.world_size' belongs on the module, not on 'func.func'}}
func.func @world_size_on_function() attributes {fsdp.world_size = 2 : i64} {
  return
}

// -----

// The world size is a positive i64 ...
// expected-error @+1 {{'fsdp.world_size' must be a positive i64, not 0 : i64}}
module attributes {fsdp.world_size = 0 : i64} {
}

// -----

// ... not another integer type.
// expected-error @+1 {{'fsdp.world_size' must be a positive i64, not 2 : i32}}
module attributes {fsdp.world_size = 2 : i32} {
}

// -----

// What --ckpt=auto chose is one line of text.
// expected-error @+1 {{'fsdp.checkpoint_choice' must be a string, not 1 : i64}}
module attributes {fsdp.checkpoint_choice = 1} {
}

// -----

// fsdp-fuse-attention's record: a count and the reasons, one string each.
// expected-error @+1 {{'fsdp.attention_fusion' has no 'unfused'}}
module attributes {fsdp.attention_fusion = {fused = 1}} {
}

// -----

// expected-error @+1 {{'fsdp.attention_fusion' unfused must be an array of non-empty strings}}
module attributes {fsdp.attention_fusion = {fused = 0, unfused = [3]}} {
}

// -----

// expected-error @+1 {{'fsdp.attention_fusion' fused must be an i64 >= 0}}
module attributes {fsdp.attention_fusion = {fused = -1, unfused = []}} {
}

// -----

// Only collectives, offload copies and optimizer updates run on a stream
// of their own.
func.func @stream_on_compute(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fsdp.stream' belongs on an fsdp collective, offload copy or optimizer update, not on 'nn.neg'}}
  %0 = nn.neg %x {fsdp.stream = 1 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Collectives run on compute (0) or communication (1); offload copies on
// compute or the copy stream (2); optimizer updates on compute or the host
// stream (3).
func.func @stream_out_of_range(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'fsdp.stream' must be the i64 stream 0 (compute) or 1 (communication), not 2 : i64}}
  %0 = fsdp.all_gather %x {groups = array<i64: 0, 1>, group_size = 2, fsdp.stream = 2 : i64} : tensor<4xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @copy_on_the_communication_stream(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fsdp.stream' must be the i64 stream 0 (compute) or 2 (copy), not 1 : i64}}
  %0 = fsdp.to_device %x {fsdp.stream = 1 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @update_on_the_copy_stream(%p: tensor<4xf32> {fsdp.host}, %g: tensor<4xf32> {fsdp.host}, %lr: tensor<f64> {fsdp.host}) -> tensor<4xf32> {
  // expected-error @+1 {{'fsdp.stream' must be the i64 stream 0 (compute) or 3 (host), not 2 : i64}}
  %0 = nn.sgd %p, %g, %lr {fsdp.stream = 2 : i64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The host stream touches host memory only: here the gradient is a device
// value (neither an fsdp.host argument nor an fsdp.to_host result).
func.func @update_on_host_reads_the_device(%p: tensor<4xf32> {fsdp.host}, %g: tensor<4xf32>, %lr: tensor<f64> {fsdp.host}) -> tensor<4xf32> {
  // expected-error @+1 {{'fsdp.stream' 3 (host) needs every operand in host memory (an 'fsdp.host' argument or an fsdp.to_host result), but operand 1 is not}}
  %0 = nn.sgd %p, %g, %lr {fsdp.stream = 3 : i64, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A stream is an i64.
func.func @stream_not_i64(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fsdp.stream' must be the i64 stream 0 (compute) or 1 (communication), not 1 : i32}}
  %0 = fsdp.all_reduce %x {groups = array<i64: 0, 1>, group_size = 2, reduction = "sum", fsdp.stream = 1 : i32} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A recomputed op names its block ...
func.func @recompute_empty(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fsdp.recompute' must name a block (a non-empty string), not ""}}
  %0 = nn.neg %x {fsdp.recompute = ""} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// ... as a string.
func.func @recompute_not_string(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fsdp.recompute' must name a block (a non-empty string), not 3 : i64}}
  %0 = nn.neg %x {fsdp.recompute = 3} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The evaluation loss mark is a unit attribute.
func.func @eval_loss_not_unit(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fsdp.eval_loss' must be a unit attribute, not true}}
  %0 = nn.neg %x {fsdp.eval_loss = true} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// fsdp.host is a flag (a unit attribute).
// expected-error @+1 {{argument 0: 'fsdp.host' must be a unit attribute, not true}}
func.func @host_not_unit(%s: tensor<4xf32> {fsdp.host = true}) {
  return
}

// -----

// A unit description is a dictionary.
// expected-error @+1 {{argument 0: 'fsdp.unit' must be a dictionary}}
func.func @unit_not_dictionary(%s: tensor<4xf32> {fsdp.unit = "u"}) {
  return
}

// -----

// Every key the plan emitter reads must be there ...
// expected-error @+1 {{argument 0: 'fsdp.unit' has no 'params'}}
func.func @unit_missing_key(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 1 : i64}}) {
  return
}

// -----

// ... and no other.
// expected-error @+1 {{argument 0: 'fsdp.unit' has an unknown key 'shard_numel'}}
func.func @unit_unknown_key(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 1 : i64, params = [{name = "w", offset = 0 : i64, type = tensor<4xf32>}], shard_numel = 4 : i64}}) {
  return
}

// -----

// The unit has a name (the plan's Unit table is keyed by it).
// expected-error @+1 {{argument 0: 'fsdp.unit' name must be a non-empty string}}
func.func @unit_empty_name(%s: tensor<4xf32> {fsdp.unit = {name = "", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 1 : i64, params = [{name = "w", offset = 0 : i64, type = tensor<4xf32>}]}}) {
  return
}

// -----

// Sizes are i64.
// expected-error @+1 {{argument 0: 'fsdp.unit' flat_numel, padded_numel and group_size must be i64}}
func.func @unit_size_not_i64(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i32, padded_numel = 4 : i64, group_size = 1 : i64, params = [{name = "w", offset = 0 : i64, type = tensor<4xf32>}]}}) {
  return
}

// -----

// A flat buffer is split over at least one rank.
// expected-error @+1 {{argument 0: 'fsdp.unit' group_size must be at least 1}}
func.func @unit_zero_group(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 0 : i64, params = [{name = "w", offset = 0 : i64, type = tensor<4xf32>}]}}) {
  return
}

// -----

// Padding only adds elements ...
// expected-error @+1 {{argument 0: 'fsdp.unit' padded_numel (2) must be at least flat_numel (4) and a multiple of group_size (1)}}
func.func @unit_padding_too_small(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 2 : i64, group_size = 1 : i64, params = [{name = "w", offset = 0 : i64, type = tensor<4xf32>}]}}) {
  return
}

// -----

// ... and splits the buffer into equal shards.
// expected-error @+1 {{argument 0: 'fsdp.unit' padded_numel (6) must be at least flat_numel (4) and a multiple of group_size (4)}}
func.func @unit_uneven_shards(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 6 : i64, group_size = 4 : i64, params = [{name = "w", offset = 0 : i64, type = tensor<4xf32>}]}}) {
  return
}

// -----

// The argument is one shard: padded_numel / group_size elements ...
// expected-error @+1 {{argument 0: 'fsdp.unit' argument must be a 1-D tensor of padded_numel / group_size = 2 elements, not 'tensor<4xf32>'}}
func.func @unit_wrong_shard_size(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 2 : i64, params = [{name = "w", offset = 0 : i64, type = tensor<4xf32>}]}}) {
  return
}

// -----

// ... in one dimension.
// expected-error @+1 {{argument 0: 'fsdp.unit' argument must be a 1-D tensor of padded_numel / group_size = 4 elements, not 'tensor<2x2xf32>'}}
func.func @unit_shard_not_1d(%s: tensor<2x2xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 1 : i64, params = [{name = "w", offset = 0 : i64, type = tensor<4xf32>}]}}) {
  return
}

// -----

// A unit holds at least one parameter.
// expected-error @+1 {{argument 0: 'fsdp.unit' params must be a non-empty array}}
func.func @unit_no_params(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 1 : i64, params = []}}) {
  return
}

// -----

// Each parameter is a dictionary ...
// expected-error @+1 {{argument 0: 'fsdp.unit' params must be dictionaries}}
func.func @param_not_dictionary(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 1 : i64, params = ["w"]}}) {
  return
}

// -----

// ... with name, offset and type ...
// expected-error @+1 {{argument 0: 'fsdp.unit' param has no 'offset'}}
func.func @param_missing_key(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 1 : i64, params = [{name = "w", type = tensor<4xf32>}]}}) {
  return
}

// -----

// ... and nothing else.
// expected-error @+1 {{argument 0: 'fsdp.unit' param has an unknown key 'dtype'}}
func.func @param_unknown_key(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 1 : i64, params = [{name = "w", offset = 0 : i64, type = tensor<4xf32>, dtype = f32}]}}) {
  return
}

// -----

// A parameter keeps its source model name (weights and checkpoints use it).
// expected-error @+1 {{argument 0: 'fsdp.unit' param name must be a non-empty string}}
func.func @param_empty_name(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 1 : i64, params = [{name = "", offset = 0 : i64, type = tensor<4xf32>}]}}) {
  return
}

// -----

// Offsets are non-negative i64 element offsets.
// expected-error @+1 {{argument 0: 'fsdp.unit' param 'w': offset must be a non-negative i64}}
func.func @param_negative_offset(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 1 : i64, params = [{name = "w", offset = -1 : i64, type = tensor<4xf32>}]}}) {
  return
}

// -----

// A parameter's type is a static tensor type.
// expected-error @+1 {{argument 0: 'fsdp.unit' param 'w': type must be a static tensor type}}
func.func @param_dynamic_type(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 1 : i64, params = [{name = "w", offset = 0 : i64, type = tensor<?xf32>}]}}) {
  return
}

// -----

// Parameters share the shard's element type (the flat buffer holds them as is).
// expected-error @+1 {{argument 0: 'fsdp.unit' param 'w' has element type 'bf16', the shard 'f32'}}
func.func @param_element_type(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 1 : i64, params = [{name = "w", offset = 0 : i64, type = tensor<4xbf16>}]}}) {
  return
}

// -----

// Every parameter lies inside the flat buffer.
// expected-error @+1 {{argument 0: 'fsdp.unit' param 'w' ends past flat_numel (4)}}
func.func @param_past_end(%s: tensor<4xf32> {fsdp.unit = {name = "u", flat_numel = 4 : i64, padded_numel = 4 : i64, group_size = 1 : i64, params = [{name = "w", offset = 2 : i64, type = tensor<4xf32>}]}}) {
  return
}
