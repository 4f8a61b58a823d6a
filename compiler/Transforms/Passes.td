//===- Passes.td - the compiler's stages as declarative passes -*- tablegen -*-===//
//
// Every stage fsdp-opt runs after import is a pass declared here: its name
// on the command line, a summary, a description with a small before/after,
// and typed options (choices are enums, numbers are numbers). mlir-tblgen
// -gen-pass-decls turns this into the options structs, the `impl::XBase`
// classes each pass's own .cpp file derives from, the `createX` functions
// the pipeline (compiler/Pipelines/Pipeline.cpp) builds from, and
// registerFsdpPasses(). The option types and the values of each choice
// (flagChoices, spelled from the flag's name table) are in
// compiler/Transforms/PassOptions.h. An option that is also an fsdp-opt flag
// takes the flag's default, ::fsdp::defaults::FIELD
// (compiler/Pipelines/CompileFlags.def), so a default is written once; an
// option whose meaning differs from its flag's (weight-decay as given,
// reduce without auto) keeps its own.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_PASSES_TD
#define FSDP_COMPILER_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Train stage (compiler/Autodiff/)
//===----------------------------------------------------------------------===//

def FuseAttentionPass : Pass<"fsdp-fuse-attention", "::mlir::ModuleOp"> {
  let summary = "Rewrite @forward's decomposed attentions into nn.attention (exact or "
                "not at all)";
  let description = [{
    Finds softmax(q kᵀ · scale + mask) v as the exporters write it: a
    product of queries and transposed keys (nn.transpose of the last two
    dims, or dynamo's reshape, transpose, reshape), scalar factors on the
    product or on either operand (dynamo scales q and k by √scale each), an
    additive float mask or a where(mask, s, -inf), a softmax over the keys
    and a product with the values, and replaces it with one nn.attention.
    A constant mask equal to the causal triangle becomes `is_causal`. A
    chain it cannot prove means the same function (dropout, a softmax over
    another axis, probabilities read elsewhere, a mask computed from a
    parameter that gets a gradient (one `freeze` matches gets none, and in
    a plan without `gradients` none does), shapes that broadcast) stays as it is; the module attribute
    `fsdp.attention_fusion` records how many were fused and why the others
    were not. It runs first, before mixed precision and autodiff, so the
    backward is nn.attention_grad and no score tensor is saved.

    ```mlir
    // Before
    %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x8x4xf32> to tensor<1x2x4x8xf32>
    %s = nn.matmul %q, %kt : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x8x8xf32>
    %c = nn.constant dense<5.000000e-01> : tensor<f32>
    %ss = nn.mul %s, %c : (tensor<1x2x8x8xf32>, tensor<f32>) -> tensor<1x2x8x8xf32>
    %p = nn.softmax %ss {axis = 3 : i64} : tensor<1x2x8x8xf32>
    %o = nn.matmul %p, %v : (tensor<1x2x8x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
    // After
    %o, %lse = nn.attention %q, %k, %v {is_causal = false, scale = 5.000000e-01 : f32}
        : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>)
        -> (tensor<1x2x8x4xf32>, tensor<1x2x8xf32>)
    ```
  }];
  let options = [
    Option<"freeze", "freeze", "std::string", /*default=*/"::fsdp::defaults::freezeRegex",
           "parameters matching this regex are buffers: a mask may be computed from them">,
    Option<"gradients", "gradients", "bool", /*default=*/"true",
           "whether the plan has a backward (false: a mask may be computed from anything)">,
  ];
  let dependentDialects = ["::fsdp::nn::NNDialect"];
}

def FuseGeluPass : Pass<"fsdp-fuse-gelu", "::mlir::ModuleOp"> {
  let summary = "Rewrite @forward's exported GELU formulas into nn.gelu (exact or not at all)";
  let description = [{
    Finds F.gelu as torch's exporters write it below opset 20: x · (erf(x /
    √2) + 1) · 0.5 and 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³))),
    in TorchScript's and dynamo's operand orders (x³ as a Pow or two
    products), every constant equal to torch's in f32 and every link read
    once, and replaces it with one nn.gelu of that approximation. Under a
    16-bit --param-dtype the pipeline runs it before mixed precision, so
    GELU is rounded once to the compute dtype as torch's kernel rounds it,
    not after each of the formula's ops, and its gradient is one
    nn.gelu_grad. f32 plans keep the exported chain.

    ```mlir
    // Before
    %c = nn.constant dense<1.41421354> : tensor<f32>
    %d = nn.div %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %e = nn.erf %d : tensor<4x8xf32>
    %one = nn.constant dense<1.000000e+00> : tensor<f32>
    %a = nn.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %m = nn.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %half = nn.constant dense<5.000000e-01> : tensor<f32>
    %y = nn.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    // After
    %y = nn.gelu %x : tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["::fsdp::nn::NNDialect"];
}

def MixedPrecisionPass : Pass<"fsdp-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Compute @forward in bf16 or f16 as FSDP2's MixedPrecisionPolicy "
                "does, following torch's type promotion op by op";
  let description = [{
    Runs on @forward before the loss is attached and the backward built, so
    the gradients inherit the dtypes: each trainable parameter is cast once
    to `param-dtype` at the top (the sharder then gathers it in that dtype
    and the cast disappears), float graph inputs too when
    `cast-forward-inputs` is set, and every op whose operands changed is
    retyped by torch's promotion rule: the result takes the promoted dtype of
    its dimensioned float operands (rank-0 operands, which is what an export
    makes of a Python scalar, do not promote unless every operand is rank
    0); an operand of another dtype is cast to it. A matmul or gemm whose
    operands disagree is an error, as torch refuses it. Buffers (float
    constants and `freeze`d initializers) keep f32, as FSDP2 casts only
    parameters. Parameters matching `keep-f32` stay f32 and the ops that
    read them take f32 operands (torch: an f32 policy on the module, whose
    forward inputs are cast to f32). `output-dtype` casts the float outputs.

    ```mlir
    // Before: fsdp-mixed-precision{param-dtype=bf16}
    %0 = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    // After
    %xb = nn.cast %x : tensor<2x4xf32> to tensor<2x4xbf16>
    %wb = nn.cast %w : tensor<4x3xf32> to tensor<4x3xbf16>
    %0 = nn.matmul %xb, %wb : (tensor<2x4xbf16>, tensor<4x3xbf16>) -> tensor<2x3xbf16>
    ```
  }];
  let dependentDialects = ["::fsdp::nn::NNDialect"];
  let options = [
    Option<"paramDtype", "param-dtype", "::fsdp::DType", /*default=*/"::fsdp::DType::BF16",
           "the compute dtype (bf16 or f16)",
           [{::fsdp::flagChoices<::fsdp::DType>("param-dtype")}]>,
    Option<"outputDtype", "output-dtype", "std::string", /*default=*/"",
           "cast float outputs to f32, bf16 or f16 (empty: keep the compute dtype)">,
    Option<"castForwardInputs", "cast-forward-inputs", "bool", /*default=*/"true",
           "cast float graph inputs to the compute dtype">,
    Option<"keepF32", "keep-f32", "std::string", /*default=*/"",
           "parameters matching this regex stay f32">,
    Option<"freeze", "freeze", "std::string", /*default=*/"::fsdp::defaults::freezeRegex",
           "initializers matching this regex are buffers (not cast)">,
  ];
}

def UpcastCompositesPass : Pass<"fsdp-upcast-composites", "::mlir::ModuleOp"> {
  let summary = "Recompute @forward's 16-bit RMSNorms and SiLUs in f32, rounding once";
  let description = [{
    torch computes F.rms_norm, transformers' RMSNorms and F.silu in f32
    even on bf16/f16 tensors and rounds once; their exports write the
    formula, whose ops would each round after mixed precision. This finds
    x · reciprocal(sqrt(reduce_mean(x², trailing axes) + eps)) and
    x · sigmoid(x) on a 16-bit x (x² as a Pow by 2 or x · x, eps a scalar,
    every link read once) and recomputes them in f32 from a widened x,
    rounding back once at the end. An RMSNorm's weight product joins the
    f32 chain when the normalized value is its left operand (`normed *
    weight`: torch's decomposition, Gemma); when the weight is the left one
    (`weight * normed.to(dtype)`: transformers' Llama) the normalized value
    is rounded first. Runs after fsdp-mixed-precision, before autodiff.

    ```mlir
    // Before
    %s = nn.sigmoid %x : tensor<2x8xbf16>
    %y = nn.mul %x, %s : (tensor<2x8xbf16>, tensor<2x8xbf16>) -> tensor<2x8xbf16>
    // After
    %w = nn.cast %x : tensor<2x8xbf16> to tensor<2x8xf32>
    %s = nn.sigmoid %w : tensor<2x8xf32>
    %m = nn.mul %w, %s : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    %y = nn.cast %m : tensor<2x8xf32> to tensor<2x8xbf16>
    ```
  }];
  let dependentDialects = ["::fsdp::nn::NNDialect"];
}

def AttachLossPass : Pass<"fsdp-attach-loss", "::mlir::ModuleOp"> {
  let summary = "Leave @forward returning only the training loss (the model's, "
                "or cross-entropy attached to an output)";
  let description = [{
    Training needs one scalar to differentiate. Without `xent`, the model's
    own loss is kept: its single scalar float output, or among several the
    one named "loss". With `xent=OUTPUT`, a mean softmax cross-entropy of the
    logits output OUTPUT against the integer input `labels` is attached (the
    input is added when the model has none of that name). The other outputs
    are dropped. This is `fsdp-opt --loss`.

    ```mlir
    // Before: fsdp-attach-loss{xent=logits}
    func.func @forward(%x: tensor<2x4xf32> {nn.input = "x"},
                       %w: tensor<4x3xf32> {nn.param = "w"})
        -> (tensor<2x3xf32> {nn.output = "logits"}) {
      %0 = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    }
    // After
    func.func @forward(%x: tensor<2x4xf32> {nn.input = "x"},
                       %w: tensor<4x3xf32> {nn.param = "w"},
                       %labels: tensor<2xi64> {nn.input = "labels"})
        -> (tensor<f32> {nn.output = "loss"}) {
      %0 = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
      %1 = nn.softmax_cross_entropy %0, %labels ... -> tensor<f32>
      return %1 : tensor<f32>
    }
    ```
  }];
  let dependentDialects = ["::fsdp::nn::NNDialect"];
  let options = [
    Option<"xent", "xent", "std::string", /*default=*/"",
           "the logits output to attach a cross-entropy loss to (empty: keep "
           "the model's own loss)">,
    Option<"labels", "labels", "std::string", /*default=*/"",
           "the integer labels input of the cross-entropy (empty: the input named labels)">,
  ];
}

def BuildTrainStepPass : Pass<"fsdp-build-train-step", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff: @forward becomes @train_step returning "
                "the loss and the parameters' gradients";
  let description = [{
    Builds the backward pass from each op's GradientOpInterface. @train_step
    takes @forward's arguments and returns the loss and, for every trainable
    parameter the loss depends on, its gradient (`nn.grad` = the parameter's
    name); @forward is removed. Parameters matching `freeze` are constants of
    training (torch buffers) and get no gradient. With `loss-scale`, the
    backward pass starts from a new f32 argument `nn.loss_scale` instead of
    1 (fp16 dynamic loss scaling; fsdp-unscale-gradients undoes it).

    ```mlir
    // Before
    func.func @forward(%x: tensor<2x4xf32> {nn.input = "x"},
                       %w: tensor<4x4xf32> {nn.param = "w"})
        -> (tensor<f32> {nn.output = "loss"}) {
      %0 = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      %1 = nn.reduce_mean %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
      return %1 : tensor<f32>
    }
    // After
    func.func @train_step(%x: tensor<2x4xf32> {nn.input = "x"},
                          %w: tensor<4x4xf32> {nn.param = "w"})
        -> (tensor<f32> {nn.output = "loss"}, tensor<4x4xf32> {nn.grad = "w"}) {
      %0 = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      %1 = nn.reduce_mean %0 ... -> tensor<f32>
      ...                                   // d loss / d %0, as %8
      %9 = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<2x4xf32> to tensor<4x2xf32>
      %10 = nn.matmul %9, %8 : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
      return %1, %10 : tensor<f32>, tensor<4x4xf32>
    }
    ```
  }];
  let dependentDialects = ["::fsdp::nn::NNDialect"];
  let options = [
    Option<"freeze", "freeze", "std::string", /*default=*/"::fsdp::defaults::freezeRegex",
           "POSIX extended regex of parameters that are not trained">,
    Option<"lossScale", "loss-scale", "bool", /*default=*/"false",
           "seed the backward pass with an f32 argument `nn.loss_scale` (dynamic "
           "loss scaling) instead of 1">,
  ];
}

//===----------------------------------------------------------------------===//
// Optimizer, checkpointing, sharding, scheduling, fusion (compiler/Transforms/)
//===----------------------------------------------------------------------===//

def ApplyOptimizerPass : Pass<"fsdp-apply-optimizer", "::mlir::ModuleOp"> {
  let summary = "Append AdamW or SGD updates of every parameter to @train_step";
  let description = [{
    Each gradient result of @train_step becomes an update of its parameter:
    one `nn.adamw` or `nn.sgd` per parameter, new arguments for the
    optimizer state (`nn.state`), the learning rate (`nn.lr`) and the step
    (`nn.step`), and results with the new values (`nn.update` = the
    argument they replace).

    ```mlir
    // Before: fsdp-apply-optimizer{optimizer=sgd}
    func.func @train_step(%x: tensor<2x4xf32> {nn.input = "x"},
                          %w: tensor<4x4xf32> {nn.param = "w"})
        -> (tensor<f32> {nn.output = "loss"}, tensor<4x4xf32> {nn.grad = "w"}) {
      ...
      return %1, %10 : tensor<f32>, tensor<4x4xf32>
    }
    // After
    func.func @train_step(%x: tensor<2x4xf32> {nn.input = "x"},
                          %w: tensor<4x4xf32> {nn.param = "w"},
                          %lr: tensor<f64> {nn.lr})
        -> (tensor<f32> {nn.output = "loss"}, tensor<4x4xf32> {nn.update = "w"}) {
      ...
      %new_param = nn.sgd %w, %10, %lr {momentum = 0.000000e+00 : f64, nesterov = false,
          weight_decay = 0.000000e+00 : f64} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f64>) -> tensor<4x4xf32>
      return %1, %new_param : tensor<f32>, tensor<4x4xf32>
    }
    ```
  }];
  let dependentDialects = ["::fsdp::nn::NNDialect"];
  let options = [
    Option<"optimizer", "optimizer", "::fsdp::OptimizerKind",
           /*default=*/"::fsdp::defaults::optimizer",
           "the update rule: adamw or sgd",
           [{::fsdp::flagChoices<::fsdp::OptimizerKind>("optimizer")}]>,
    Option<"beta1", "beta1", "double", /*default=*/"::fsdp::defaults::beta1",
           "AdamW first-moment decay">,
    Option<"beta2", "beta2", "double", /*default=*/"::fsdp::defaults::beta2",
           "AdamW second-moment decay">,
    Option<"eps", "eps", "double", /*default=*/"::fsdp::defaults::eps",
           "AdamW denominator epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "decoupled (AdamW) or L2 (SGD) weight decay">,
    Option<"momentum", "momentum", "double", /*default=*/"::fsdp::defaults::momentum",
           "SGD momentum">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"::fsdp::defaults::nesterov",
           "SGD with Nesterov momentum">,
    Option<"noDecay", "no-decay", "std::string", /*default=*/"::fsdp::defaults::noDecayRegex",
           "POSIX extended regex of parameters without weight decay">,
  ];
}

def RecomputeActivationsPass
    : Pass<"fsdp-recompute-activations", "::mlir::ModuleOp"> {
  let summary = "Activation checkpointing: the backward pass of @train_step "
                "reads recomputed copies of each block's forward values "
                "instead of saved ones";
  let description = [{
    Runs on the single-rank @train_step, before sharding. For each
    checkpointed block (a `--wrap=blocks` unit such as `layers.3`), the
    forward values the backward pass reads are dropped and the ops that
    compute them are cloned, from the block's inputs, right before their
    first backward use; clones carry `fsdp.recompute = "<block>"`. Under
    `ckpt=selective` the outputs of matmuls, gemms and softmaxes stay saved
    and only the cheap ops between them are recomputed. `blocks` picks the
    blocks by index in model order (default: all).

    ```mlir
    // Before: %1 is saved from the forward pass for the backward
    %0 = nn.matmul %x, %w0 : ...
    %1 = nn.relu %0 : tensor<2x4xf32>
    %2 = nn.matmul %1, %w1 : ...
    ...
    %13 = nn.relu_grad %1, %10 : tensor<2x4xf32>
    // After: the backward reads a recomputed copy; %1 dies after the forward
    %0 = nn.matmul %x, %w0 : ...
    %1 = nn.relu %0 : tensor<2x4xf32>
    %2 = nn.matmul %1, %w1 : ...
    ...
    %r0 = nn.matmul %x, %w0 {fsdp.recompute = "layers.0"} : ...
    %r1 = nn.relu %r0 {fsdp.recompute = "layers.0"} : tensor<2x4xf32>
    %13 = nn.relu_grad %r1, %10 : tensor<2x4xf32>
    ```
  }];
  let dependentDialects = ["::fsdp::nn::NNDialect"];
  let options = [
    Option<"ckpt", "ckpt", "::fsdp::CkptKind", /*default=*/"::fsdp::CkptKind::Blocks",
           "what a checkpointed block recomputes: blocks (all of it) or selective "
           "(all but matmul, gemm and softmax outputs)",
           [{::fsdp::flagChoices("ckpt", {::fsdp::CkptKind::Blocks,
                                          ::fsdp::CkptKind::Selective})}]>,
    ListOption<"blocks", "blocks", "int64_t",
               "indices of the blocks to checkpoint, in model order (default: all)">,
    Option<"device", "device", "::fsdp::DeviceKind", /*default=*/"::fsdp::defaults::device",
           "the device whose cost model prices each block's recomputation: h100, "
           "a100 or cpu",
           [{::fsdp::flagChoices<::fsdp::DeviceKind>("device")}]>,
  ];
}

def ShardParametersPass : Pass<"fsdp-shard-parameters", "::mlir::ModuleOp"> {
  let summary = "FSDP: flat-parameter units, all-gathers, gradient "
                "reduce-scatters and sharded optimizer updates in @train_step";
  let description = [{
    Makes the single-rank @train_step the step every rank of an FSDP group
    runs. The parameters are grouped into units by `wrap`, each unit into a
    flat buffer padded so every rank of its shard group holds an equal
    shard, and the step takes the shards (`fsdp.unit`) instead of the
    parameters. An `fsdp.all_gather` rebuilds a unit before it is used and
    `fsdp.flat_view`s read its parameters; gradients are packed
    (`fsdp.flatten`) and reduce-scattered (or all-reduced under
    `shard=none`), the optimizer updates the local shard only, and the loss
    is averaged over the ranks.

    ```mlir
    // Before: fsdp-shard-parameters{world-size=2}
    func.func @train_step(%x: tensor<2x4xf32> {nn.input = "x"},
                          %w: tensor<4x4xf32> {nn.param = "layers.0.w"}, %lr: tensor<f64> {nn.lr})
        -> (tensor<f32> {nn.output = "loss"}, tensor<4x4xf32> {nn.update = "layers.0.w"}) {
      %0 = nn.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      ...
      %new_param = nn.sgd %w, %g, %lr ... -> tensor<4x4xf32>
      return %loss, %new_param : tensor<f32>, tensor<4x4xf32>
    }
    // After
    module attributes {fsdp.world_size = 2 : i64} {
    func.func @train_step(%x: tensor<2x4xf32> {nn.input = "x"}, %lr: tensor<f64> {nn.lr},
                          %shard: tensor<8xf32> {fsdp.unit = {name = "layers.0", flat_numel = 16 : i64,
                              padded_numel = 16 : i64, group_size = 2 : i64, params = [...]}})
        -> (tensor<f32> {nn.output = "loss"}, tensor<8xf32> {nn.update = "layers.0"}) {
      %0 = fsdp.all_gather %shard {group_size = 2 : i64, groups = array<i64: 0, 1>} : tensor<8xf32> -> tensor<16xf32>
      %1 = fsdp.flat_view %0 {offset = 0 : i64} : tensor<16xf32> -> tensor<4x4xf32>
      %2 = nn.matmul %x, %1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      ...
      %f = fsdp.flatten %g {offsets = array<i64: 0>} : (tensor<4x4xf32>) -> tensor<16xf32>
      %rs = fsdp.reduce_scatter %f {group_size = 2 : i64, groups = array<i64: 0, 1>, reduction = "avg"} : tensor<16xf32> -> tensor<8xf32>
      %new_param = nn.sgd %shard, %rs, %lr ... -> tensor<8xf32>
      %mean = fsdp.all_reduce %loss {group_size = 2 : i64, groups = array<i64: 0, 1>, reduction = "avg"} : tensor<f32>
      return %mean, %new_param : tensor<f32>, tensor<8xf32>
    }
    }
    ```
  }];
  let dependentDialects = ["::fsdp::dist::FSDPDialect", "::fsdp::nn::NNDialect"];
  let options = [
    Option<"worldSize", "world-size", "int64_t", /*default=*/"::fsdp::defaults::worldSize",
           "ranks the step is compiled for">,
    Option<"shard", "shard", "::fsdp::ShardSpec", /*default=*/"::fsdp::ShardSpec()",
           "full, grad-op, none or hybrid:G (shard within groups of G ranks)">,
    Option<"wrap", "wrap", "::fsdp::WrapSpec", /*default=*/"::fsdp::WrapSpec()",
           "units: blocks, size:N (>= N parameter elements) or regex:RE">,
    Option<"paramDtype", "param-dtype", "::fsdp::DType",
           /*default=*/"::fsdp::defaults::paramDtype",
           "dtype of gathered parameters, f32, bf16 or f16 (master shards stay f32)",
           [{::fsdp::flagChoices<::fsdp::DType>("param-dtype")}]>,
    Option<"reduceDtype", "reduce-dtype", "::fsdp::DType",
           /*default=*/"::fsdp::defaults::reduceDtype",
           "dtype gradients are reduced in: f32, bf16 or f16",
           [{::fsdp::flagChoices<::fsdp::DType>("reduce-dtype")}]>,
    Option<"alignShards", "align-shards", "bool", /*default=*/"false",
           "every shard size a multiple of the parameter alignment (what "
           "fsdp-clip-gradients needs for bitwise-equal norms across strategies)">,
  ];
}

def AccumulateMicroBatchesPass
    : Pass<"fsdp-accumulate-micro-batches", "::mlir::ModuleOp"> {
  let summary = "Gradient accumulation: K micro-batches per optimizer step, "
                "each gradient reduced per micro-batch (each) or summed "
                "unsharded and reduced once (last)";
  let description = [{
    Runs on the sharded @train_step (right after fsdp-shard-parameters).
    Every `nn.input` becomes K times as many rows; micro-batch k reads rows
    [k*b, (k+1)*b) and runs the step's forward and backward (with its own
    all-gathers; persistent ones are gathered once) after micro-batch k-1.
    Per flat group, `reduce=each` sums the reduced gradient shards of the
    micro-batches, `reduce=last` (or the group named in `last-units`) sums
    the unsharded flat gradient and reduces it once after the last
    micro-batch. Sums are scaled by 1/K; the loss is the micro-batches'
    mean. The module records K (`fsdp.grad_accum`, the plan's grad_accum)
    and the choice per group (`fsdp.accumulation`).

    ```mlir
    // Before: fsdp-accumulate-micro-batches{micro-batches=2 reduce=each}
    func.func @train_step(%x: tensor<2x4xf32> {nn.input = "x"}, ...) {
      %0 = fsdp.all_gather %shard ...
      ...
      %rs = fsdp.reduce_scatter %f ... : tensor<16xf32> -> tensor<8xf32>
      %new = nn.sgd %shard, %rs, %lr ...
    // After
    func.func @train_step(%x: tensor<4x4xf32> {nn.input = "x"}, ...) {
      %x0 = nn.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 4>, ...}
      %0 = fsdp.all_gather %shard ...
      ...
      %rs = fsdp.reduce_scatter %f ... : tensor<16xf32> -> tensor<8xf32>
      %x1 = nn.slice %x {starts = array<i64: 2, 0>, ends = array<i64: 4, 4>, ...}
      %1 = fsdp.all_gather %shard {fsdp.micro_batch = 1 : i64, ...}
      ...
      %rs1 = fsdp.reduce_scatter %f1 ...
      %sum = nn.add %rs, %rs1
      %mean = nn.mul %sum, %half
      %new = nn.sgd %shard, %mean, %lr ...
    ```
  }];
  let dependentDialects = ["::fsdp::dist::FSDPDialect", "::fsdp::nn::NNDialect"];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"::fsdp::defaults::gradAccum",
           "K: micro-batches per optimizer step (1: the step unchanged)">,
    Option<"reduce", "reduce", "::fsdp::AccumReduceKind",
           /*default=*/"::fsdp::AccumReduceKind::Each",
           "each: reduce every micro-batch's gradient; last: sum unsharded, reduce once",
           [{::fsdp::flagChoices("accum-reduce", {::fsdp::AccumReduceKind::Each,
                                                  ::fsdp::AccumReduceKind::Last})}]>,
    ListOption<"lastUnits", "last-units", "std::string",
               "flat groups accumulated unsharded (last) whatever reduce says">,
  ];
}

def OffloadStatePass : Pass<"fsdp-offload-state", "::mlir::ModuleOp"> {
  let summary = "Shards, optimizer state and the optimizer's scalars of the "
                "sharded @train_step in host memory, with copies to and from "
                "the device";
  let description = [{
    The offload half of the shard stage (`--offload=cpu`): every unit's
    shard, its optimizer state and the lr/step scalars become host-memory
    arguments (`fsdp.host`). The device reads a shard through an
    `fsdp.to_device` copy right before the op that reads it, and each reduced
    gradient shard goes back with `fsdp.to_host`, where the optimizer
    updates the shard in place. Copies move bytes unchanged.

    ```mlir
    // Before
    func.func @train_step(..., %lr: tensor<f64> {nn.lr},
                          %shard: tensor<8xf32> {fsdp.unit = {...}}) ... {
      %0 = fsdp.all_gather %shard {...} : tensor<8xf32> -> tensor<16xf32>
      ...
    // After
    func.func @train_step(..., %lr: tensor<f64> {fsdp.host, nn.lr},
                          %shard: tensor<8xf32> {fsdp.host, fsdp.unit = {...}}) ... {
      %d = fsdp.to_device %shard : tensor<8xf32>
      %0 = fsdp.all_gather %d {...} : tensor<8xf32> -> tensor<16xf32>
      ...
    ```
  }];
  let dependentDialects = ["::fsdp::dist::FSDPDialect"];
}

def ClipGradientsPass : Pass<"fsdp-clip-gradients", "::mlir::ModuleOp"> {
  let summary = "Gradient norm clipping (torch.nn.utils.clip_grad_norm_) "
                "before the optimizer updates of @train_step, and the norm "
                "as the output grad_norm";
  let description = [{
    Runs on the sharded (or single-rank) @train_step. The total norm of
    all gradients, the 2-norm or with `norm-type=inf` the largest |g|, is
    computed from each rank's partial over its gradient shards and one
    `fsdp.all_reduce` (sum or max) over the shard group; under
    `--shard=none` each rank sums the chunks a `--shard=full` step would
    give each rank, in rank order, so both compute the same bits (with
    `fsdp-shard-parameters{align-shards}`). With `max-norm` > 0 every
    gradient is multiplied by min(1, max-norm / (norm + 1e-6)) before its
    update; with 0 the norm is only computed. Either way it is returned as
    `grad_norm`.

    ```mlir
    // Before: fsdp-clip-gradients{max-norm=1.0}, two ranks, --shard=full
    %rs = fsdp.reduce_scatter %f {...} : tensor<16xf32> -> tensor<8xf32>
    %new = nn.sgd %shard, %rs, %lr ... -> tensor<8xf32>
    return %mean, %new : tensor<f32>, tensor<8xf32>
    // After
    %sq = nn.mul %rs, %rs : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %p = nn.reduce_sum %sq {axes = array<i64: 0>, keepdims = false} : (tensor<8xf32>) -> tensor<f32>
    %t = fsdp.all_reduce %p {group_size = 2 : i64, groups = array<i64: 0, 1>, reduction = "sum"} : tensor<f32>
    %norm = nn.sqrt %t : tensor<f32>
    %c = nn.div %max, %norm_plus_eps ...          // then nn.min with 1.0
    %g = nn.mul %rs, %c : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
    %new = nn.sgd %shard, %g, %lr ... -> tensor<8xf32>
    return %mean, %new, %norm : tensor<f32>, tensor<8xf32>, tensor<f32>
    ```
  }];
  let dependentDialects = ["::fsdp::dist::FSDPDialect", "::fsdp::nn::NNDialect"];
  let options = [
    Option<"maxNorm", "max-norm", "double", /*default=*/"::fsdp::defaults::clipGradNorm",
           "the largest total norm (0: only compute and output the norm)">,
    Option<"normType", "norm-type", "std::string", /*default=*/"\"2\"",
           "the norm: 2 or inf">,
  ];
}

def UnscaleGradientsPass : Pass<"fsdp-unscale-gradients", "::mlir::ModuleOp"> {
  let summary = "fp16 dynamic loss scaling: unscale the reduced gradients and "
                "skip the optimizer updates when any is inf or NaN";
  let description = [{
    Runs after fsdp-shard-parameters on a step whose backward pass was
    seeded with the loss scale (`fsdp-build-train-step{loss-scale=true}`).
    Each optimizer update's gradient becomes `grad * inv_scale` (a new f32
    argument `nn.inv_loss_scale`); each rank's flag is 1 when any unscaled
    element is inf or NaN, all-reduced (sum) over the world; every update
    takes it as `skip_if` (a no-op when non-zero) and the step returns it
    as output "found_inf" (`nn.found_inf`), torch.amp.GradScaler's
    unscale_, found_inf and skipped step.

    ```mlir
    // Before
    %g = fsdp.reduce_scatter %flat {...} : tensor<16xf32> -> tensor<8xf32>
    %p:3 = nn.adamw %shard, %g, %m, %v, %lr, %step {...} : tensor<8xf32>, tensor<f64>, tensor<i64>
    // After
    %g = fsdp.reduce_scatter %flat {...} : tensor<16xf32> -> tensor<8xf32>
    %u = nn.mul %g, %inv : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
    %d = nn.sub %u, %u : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %n = nn.is_nan %d : (tensor<8xf32>) -> tensor<8xi1>
    %c = nn.cast %n : tensor<8xi1> to tensor<8xf32>
    %f = nn.reduce_max %c {axes = array<i64: 0>, keepdims = false} : (tensor<8xf32>) -> tensor<f32>
    %found = fsdp.all_reduce %f {..., reduction = "sum"} : tensor<f32>
    %p:3 = nn.adamw %shard, %u, %m, %v, %lr, %step skip_if(%found : tensor<f32>) {...} : ...
    return ..., %found : ..., tensor<f32>   // {nn.output = "found_inf", nn.found_inf}
    ```
  }];
  let dependentDialects = ["::fsdp::dist::FSDPDialect", "::fsdp::nn::NNDialect"];
}

def ScheduleCollectivesPass
    : Pass<"fsdp-schedule-collectives", "::mlir::ModuleOp"> {
  let summary = "Collectives of the sharded @train_step on the communication "
                "stream, all-gathers prefetched K units ahead with at most L "
                "non-root units in full";
  let description = [{
    Every fsdp collective gets `fsdp.stream = 1` (the communication stream,
    asynchronous), every offload copy (`fsdp.to_device`, `fsdp.to_host`)
    `fsdp.stream = 2` (the copy stream) and every optimizer update that
    reads host memory only (`--offload=cpu`) and is returned in place
    `fsdp.stream = 3` (the host stream); the all-gather of the unit
    `prefetch` places ahead is issued when a unit starts, unless
    `limit-all-gathers` non-root units are already in full; optimizer
    updates move up behind the next reduction.
    Only positions and streams change, so the step computes the same bits.

    ```mlir
    // Before: fsdp-schedule-collectives{prefetch=1}
    %0 = fsdp.all_gather %s0 {...} : tensor<8xf32> -> tensor<16xf32>
    %1 = fsdp.flat_view %0 {offset = 0 : i64} : tensor<16xf32> -> tensor<4x4xf32>
    %2 = nn.matmul %x, %1 : ...
    %3 = nn.relu %2 : tensor<2x4xf32>
    %4 = fsdp.all_gather %s1 {...} : tensor<8xf32> -> tensor<16xf32>
    // After: the second unit's gather overlaps the first unit's compute
    %0 = fsdp.all_gather %s0 {fsdp.stream = 1 : i64, ...} : tensor<8xf32> -> tensor<16xf32>
    %4 = fsdp.all_gather %s1 {fsdp.stream = 1 : i64, ...} : tensor<8xf32> -> tensor<16xf32>
    %1 = fsdp.flat_view %0 {offset = 0 : i64} : tensor<16xf32> -> tensor<4x4xf32>
    %2 = nn.matmul %x, %1 : ...
    %3 = nn.relu %2 : tensor<2x4xf32>
    ```
  }];
  let options = [
    Option<"prefetch", "prefetch", "int64_t", /*default=*/"::fsdp::defaults::prefetch",
           "units gathered ahead (0: at first use)">,
    Option<"limitAllGathers", "limit-all-gathers", "int64_t",
           /*default=*/"::fsdp::defaults::limitAllGathers",
           "non-root units in full at once (0: no limit)">,
  ];
}

def FuseElementwisePass : Pass<"fsdp-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "Fuse chains of f32 elementwise ops into nn.fused (one pass "
                "over memory)";
  let description = [{
    Groups f32 elementwise ops of one shape whose operands are full tensors
    of that shape or single elements, and replaces each group of two or more
    with one `nn.fused`; intermediates used outside the group become extra
    results. The ops compute the same bits fused or not, so this only saves
    memory traffic and arena space. It runs just before a plan is emitted.

    ```mlir
    // Before
    %0 = nn.add %a, %b : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %1 = nn.relu %0 : tensor<64xf32>
    %2 = nn.mul %1, %c : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    // After: the program lists [code, a, b] per op over the operands (0..2)
    // and earlier ops' values (3..); results_of names the value returned
    %2 = nn.fused %a, %b, %c {program = array<i64: 0, 0, 1, 5, 3, -1, 2, 4, 2>,
        results_of = array<i64: 5>} : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    ```
  }];
  let dependentDialects = ["::fsdp::nn::NNDialect"];
}

#endif // FSDP_COMPILER_TRANSFORMS_PASSES_TD
