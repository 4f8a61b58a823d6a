//===- NNOptimizerOps.td - parameter updates -------------------*- tablegen -*-===//
//
// One op per optimizer update of one parameter, exactly as torch.optim
// defines it, so that a training step is a single function from
// (parameters, optimizer state, batch, lr, step) to their next values. The
// results replace their operands: the plan emitter gives each result its
// operand's buffer, so state is updated in place and costs no copy. The
// learning rate (f64) and step number (i64, counting from 1) are scalar
// arguments the runtime writes before each step, so a schedule needs no
// recompilation.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_OPTIMIZER_OPS_TD
#define FSDP_NN_OPTIMIZER_OPS_TD

include "dialects/nn/NNBase.td"

def NN_F64Scalar : 0DTensorOf<[F64]>;
def NN_I64Scalar : 0DTensorOf<[I64]>;
def NN_F32Scalar : 0DTensorOf<[F32]>;

def NN_AdamWOp : NN_Op<"adamw", [NN_EncodedKernel, AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq",
                                                    "new_param", "new_exp_avg",
                                                    "new_exp_avg_sq"]>]> {
  let summary = "one AdamW update (torch.optim.AdamW)";
  let description = [{
    `param *= 1 - lr * weight_decay`; the moment estimates are updated with
    `beta1`/`beta2`; `param -= lr / (1 - beta1^step) * exp_avg /
    (sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps)`. All of `param`, `grad`
    and both moments share one type; the results are their new values.

    With `skip_if(%found_inf)` (an f32 scalar, dynamic loss scaling's
    found-inf flag), a non-zero flag makes the update a no-op: the results
    are the operands unchanged, as when torch's GradScaler skips
    `optimizer.step()`.
  }];
  let arguments = (ins NN_FloatTensor:$param, NN_FloatTensor:$grad, NN_FloatTensor:$exp_avg,
                       NN_FloatTensor:$exp_avg_sq, NN_F64Scalar:$lr, NN_I64Scalar:$step,
                       Optional<NN_F32Scalar>:$found_inf,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps, F64Attr:$weight_decay);
  let results = (outs NN_FloatTensor:$new_param, NN_FloatTensor:$new_exp_avg,
                      NN_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $lr `,` $step
    (`skip_if` `(` $found_inf^ `:` type($found_inf) `)`)? attr-dict
    `:` type($param) `,` type($lr) `,` type($step)
  }];
  let hasVerifier = 1;
}

def NN_SgdOp : NN_Op<"sgd", [NN_EncodedKernel, AttrSizedOperandSegments]> {
  let summary = "one SGD update (torch.optim.SGD, dampening 0)";
  let description = [{
    `d = grad + weight_decay * param`; with a momentum buffer
    `buf = momentum * buf + d` and `d = nesterov ? d + momentum * buf : buf`;
    then `param -= lr * d`. Without momentum there is no buffer operand and
    no buffer result. `skip_if(%found_inf)` makes the update a no-op when
    the flag is non-zero, as nn.adamw's.
  }];
  let arguments = (ins NN_FloatTensor:$param, NN_FloatTensor:$grad, NN_F64Scalar:$lr,
                       Optional<NN_FloatTensor>:$momentum_buffer,
                       Optional<NN_F32Scalar>:$found_inf,
                       F64Attr:$momentum, F64Attr:$weight_decay, BoolAttr:$nesterov);
  let results = (outs NN_FloatTensor:$new_param,
                      Optional<NN_FloatTensor>:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $lr (`,` $momentum_buffer^)?
    (`skip_if` `(` $found_inf^ `:` type($found_inf) `)`)? attr-dict
    `:` custom<SgdTypes>(type($param), type($grad), type($lr), type($momentum_buffer),
                         type($new_param), type($new_momentum_buffer))
  }];
  let hasVerifier = 1;
}

#endif // FSDP_NN_OPTIMIZER_OPS_TD
