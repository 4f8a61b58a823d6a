#!/usr/bin/env python3
"""The torch 2.x models of the parity suite, each built from a seed.

A nanoGPT-style GPT (F.scaled_dot_product_attention with is_causal=True, GELU
MLP, embedding tied to the output head), a Llama-style decoder written with
plain torch (nn.RMSNorm, rotary embeddings computed in forward, SwiGLU,
grouped-query attention through SDPA), a model made of the comparison
family (GuardedMLP: a causal mask of arange comparisons, SDPA's
where(isnan(p), 0, p) guard on activations, torch.maximum/minimum as the
MLP's nonlinearity), and random-init tiny configurations
of transformers' GPT2LMHeadModel, LlamaForCausalLM, Qwen2ForCausalLM,
MistralForCausalLM and GemmaForCausalLM; and a plain GPT (bool-mask
attention, ReLU MLP) whose graph needs none of the ops issue 15 adds, so the
export, manifest, training and load_weights path is checked apart from the
op work. Every model's forward takes
(idx, targets), int64 [B, T], and returns the mean cross-entropy, the shape
fsdp-run's token data feeds. Dropout is 0 everywhere, so train mode is
deterministic and matches what the exporter saw.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 64
SEQ = 16
BATCH = 2


# --------------------------------------------------------------------------
# nanoGPT-style GPT
# --------------------------------------------------------------------------

class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class GPTBlock(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        del seq  # SDPA's is_causal needs no mask buffer
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))


class NanoGPT(nn.Module):
    def __init__(self, vocab=VOCAB, d=32, heads=2, layers=2, seq=SEQ, block=GPTBlock):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.h = nn.ModuleList([block(d, heads, seq) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as nanoGPT does
        # Fresh LayerNorm weights are all ones: perturb them so a merge of
        # equal initializers would be visible (and the test not trivial).
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                    p.add_(0.1 * torch.randn_like(p))

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


# --------------------------------------------------------------------------
# Plain GPT: attention written out with a bool causal mask, ReLU MLP
# --------------------------------------------------------------------------

class PlainBlock(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)),
                             persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(C // self.heads))
        att = att.masked_fill(~self.mask[:T, :T], float("-inf")).softmax(-1)
        x = x + self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))
        return x + self.mlp_proj(F.relu(self.c_fc(self.ln_2(x))))


def plain_gpt():
    """nanoGPT's model with PlainBlock's attention and MLP."""
    return NanoGPT(block=PlainBlock)


# --------------------------------------------------------------------------
# Llama-style decoder in plain torch
# --------------------------------------------------------------------------

def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, d, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, d // heads
        self.q_proj = nn.Linear(d, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, d, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        repeat = self.heads // self.kv_heads  # grouped-query attention
        k = k.repeat_interleave(repeat, dim=1)
        v = v.repeat_interleave(repeat, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, -1))


class SwiGLU(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nn.Module):
    def __init__(self, d, heads, kv_heads, hidden):
        super().__init__()
        self.input_layernorm = nn.RMSNorm(d, eps=1e-6)
        self.self_attn = LlamaAttention(d, heads, kv_heads)
        self.post_attention_layernorm = nn.RMSNorm(d, eps=1e-6)
        self.mlp = SwiGLU(d, hidden)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaStyle(nn.Module):
    def __init__(self, vocab=VOCAB, d=32, heads=4, kv_heads=2, hidden=64, layers=2, theta=10000.0):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([LlamaBlock(d, heads, kv_heads, hidden) for _ in range(layers)])
        self.norm = nn.RMSNorm(d, eps=1e-6)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        head_dim = d // heads
        # Not a parameter and not saved: the exporter may fold it.
        self.register_buffer("inv_freq", 1.0 / theta ** (torch.arange(0, head_dim, 2).float() / head_dim),
                             persistent=False)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if "norm" in name:
                    p.add_(0.1 * torch.randn_like(p))

    def forward(self, idx, targets):
        T = idx.shape[1]
        pos = torch.arange(T, device=idx.device, dtype=torch.float32)
        freqs = torch.outer(pos, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        x = self.embed_tokens(idx)
        # As transformers' Llama does: the rotary tables in the activations'
        # dtype (a no-op in f32; under bf16 mixed precision SDPA needs q, k
        # and v in one dtype).
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


# --------------------------------------------------------------------------
# Guarded model: SDPA's NaN guard, a comparison mask, torch.maximum/minimum
# --------------------------------------------------------------------------

class GuardedBlock(nn.Module):
    """Attention without projections over a causal mask made of arange
    comparisons (constant: it must fold away), the softmax guard the SDPA
    translations write, where(isnan(p), 0, p), on activations, and an MLP
    whose nonlinearity is torch.maximum and torch.minimum of two projections
    (their gradient picks one operand), so a wrong Max/Min gradient or a
    guard that changes values shows in the losses."""

    def __init__(self, d):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.fc_a = nn.Linear(d, 2 * d)
        self.fc_b = nn.Linear(d, 2 * d)
        self.proj = nn.Linear(2 * d, d)

    def forward(self, x, pos):
        h = self.ln_1(x)
        causal = (pos[None, :] <= pos[:, None]) & (pos[None, :] >= 0)
        scores = (h @ h.transpose(-1, -2)) * (1.0 / math.sqrt(h.size(-1)))
        p = scores.masked_fill(~causal, float("-inf")).softmax(-1)
        p = torch.where(torch.isnan(p), 0.0, p)
        x = x + p @ h
        a, b = self.fc_a(x), self.fc_b(x)
        return x + self.proj(torch.maximum(a, b) + 0.5 * torch.minimum(a, -b))


class GuardedMLP(nn.Module):
    """Two GuardedBlocks between nanoGPT's embeddings and an untied head."""

    def __init__(self, vocab=VOCAB, d=32, seq=SEQ, layers=2):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.h = nn.ModuleList([GuardedBlock(d) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if "ln_" in name and name.endswith("weight"):
                    p.add_(0.1 * torch.randn_like(p))

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x, pos)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


# --------------------------------------------------------------------------
# transformers models (random init, tiny configs)
# --------------------------------------------------------------------------

class CausalLMLoss(nn.Module):
    """transformers' causal LM with its own label shift and loss: returns
    the mean cross-entropy of predicting targets (the wrapper feeds the
    targets as labels, so the model shifts them once more, as a user's
    training script would)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, idx, targets):
        return self.model(input_ids=idx, labels=targets, use_cache=False).loss


def _hf(name):
    import transformers as tf
    common = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=SEQ,
                  attn_implementation="sdpa")
    if name == "gpt2":
        config = tf.GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=32, n_layer=2, n_head=2,
                               resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0,
                               attn_implementation="sdpa")
        return tf.GPT2LMHeadModel(config)
    if name == "llama":
        return tf.LlamaForCausalLM(tf.LlamaConfig(**common))
    if name == "qwen2":
        return tf.Qwen2ForCausalLM(tf.Qwen2Config(**common))
    if name == "mistral":
        return tf.MistralForCausalLM(tf.MistralConfig(**common))
    if name == "gemma":
        # Gemma's default pad_token_id=0 makes nn.Embedding(padding_idx=0),
        # whose gradient torch zeroes at row 0. ONNX's Gather has no
        # padding_idx, so fsdp-opt trains that row
        # (docs/exporting-from-pytorch.md); without a pad token the rest of
        # Gemma (RMSNorm's 1 + w, tanh GELU, the embedding scale, tied head)
        # is checked here.
        return tf.GemmaForCausalLM(tf.GemmaConfig(**common, head_dim=8, pad_token_id=None))
    raise KeyError(name)


def _hf_model(name):
    def build():
        model = _hf(name)
        # Fresh norm weights are all ones (zeros for Gemma's 1 + w): perturb
        # them so merged equal initializers would show.
        with torch.no_grad():
            for pname, p in model.named_parameters():
                if "norm" in pname or "ln_" in pname:
                    p.add_(0.1 * torch.randn_like(p))
        return CausalLMLoss(model)
    return build


MODELS = {
    "plain-gpt": plain_gpt,
    "nanogpt": NanoGPT,
    "llama-style": LlamaStyle,
    "guarded-mlp": GuardedMLP,
    "hf-gpt2": _hf_model("gpt2"),
    "hf-llama": _hf_model("llama"),
    "hf-qwen2": _hf_model("qwen2"),
    "hf-mistral": _hf_model("mistral"),
    "hf-gemma": _hf_model("gemma"),
}


def build(name, seed=0):
    """The model `name` with weights from `seed`, in train mode."""
    torch.manual_seed(seed)
    model = MODELS[name]()
    model.train(True)
    return model


def example_inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    return idx, torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
