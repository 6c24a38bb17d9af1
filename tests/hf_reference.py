#!/usr/bin/python3
"""Hugging Face model directories written with PyTorch, and their logits and greedy tokens from a plain
re-implementation of the models' math in float64: the reference ptk's HF reader and decoder are checked against
(tests/hf_torch_test.sh). Nothing here comes from ptk.

  hf_reference.py llama DIR TOKENIZER.model PROMPT...  LlamaForCausalLM: config.json, two BF16 shards with
      model.safetensors.index.json, the SentencePiece model, tokenizer_config.json (BOS added);
  hf_reference.py gpt2 DIR PROMPT...                   GPT2LMHeadModel: config.json, one F16 model.safetensors with
      GPT-2's names (transformer.h.N..., Conv1D weights [in, out], the attn.bias mask buffers, no lm_head: tied),
      vocab.json mapping byte b to id b (GPT-2's byte-to-unicode spelling), merges.txt without merges;
  hf_reference.py compare PTK.npy REF.npy CONFIG.json   the worst logit error against its derived bound (below);
  hf_reference.py same DIR OTHER PROMPT...               OTHER (a Llama directory ptk convert wrote) holds DIR's
      model: tensors value for value (its own safetensors reader), the config's fields, the tokenizer's ids.

For each prompt i the model commands write DIR/ref/i.ids (the prompt's ids), DIR/ref/i.greedy (N_NEW greedy ids)
and DIR/ref/i.npy (the prompt's logits, float64 [P, V]). The weights are drawn in float32, rounded to the stored
type, and the reference computes in float64 from the rounded values: the only differences left are ptk's float32
arithmetic.
"""
import json
import math
import os
import sys

import numpy as np
import torch

N_NEW = 24


def write_safetensors(path, tensors):
    """tensors: name -> torch tensor (float32, bfloat16 or float16); the format's own layout, written by hand."""
    kinds = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        header[name] = {"dtype": kinds[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for b in blobs:
            f.write(b)


def rmsnorm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def layernorm(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def causal_attention(q, k, v):
    """q [H, T, D], k, v [H, T, D] -> [T, H*D]."""
    T, D = q.shape[1], q.shape[2]
    scores = q @ k.transpose(1, 2) / math.sqrt(D)
    scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    return (torch.softmax(scores, -1) @ v).transpose(0, 1).reshape(T, -1)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), -1)


def llama_logits(w, c, ids):
    """LlamaForCausalLM's forward pass (rotate-half rope, grouped-query attention, SwiGLU), float64."""
    C, H, Hkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    D, T = C // H, len(ids)
    inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    angles = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    cos, sin = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()
    x = w["model.embed_tokens.weight"][ids]
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = rmsnorm(x, w[p + "input_layernorm.weight"], c["rms_norm_eps"])
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(T, H, D).transpose(0, 1)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(T, Hkv, D).transpose(0, 1)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(T, Hkv, D).transpose(0, 1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(H // Hkv, 0), v.repeat_interleave(H // Hkv, 0)
        x = x + causal_attention(q, k, v) @ w[p + "self_attn.o_proj.weight"].T
        h = rmsnorm(x, w[p + "post_attention_layernorm.weight"], c["rms_norm_eps"])
        gate, up = h @ w[p + "mlp.gate_proj.weight"].T, h @ w[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(gate) * up) @ w[p + "mlp.down_proj.weight"].T
    return rmsnorm(x, w["model.norm.weight"], c["rms_norm_eps"]) @ w["lm_head.weight"].T


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gpt2_logits(w, c, ids):
    """GPT2LMHeadModel's forward pass (Conv1D: y = x W + b with W [in, out]; learned positions; tied head)."""
    C, H, T = c["n_embd"], c["n_head"], len(ids)
    D, eps = C // H, c["layer_norm_epsilon"]
    x = w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][:T]
    for i in range(c["n_layer"]):
        p = "transformer.h.%d." % i
        h = layernorm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = (t.view(T, H, D).transpose(0, 1) for t in qkv.split(C, -1))
        x = x + causal_attention(q, k, v) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = layernorm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        h = gelu_new(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    return layernorm(x, w["transformer.ln_f.weight"], w["transformer.ln_f.bias"], eps) @ w["transformer.wte.weight"].T


def write_references(out, forward, weights, config, prompts):
    """The prompt's logits and N_NEW greedy tokens (each step recomputes the whole sequence: no cache to get wrong)."""
    os.makedirs(os.path.join(out, "ref"), exist_ok=True)
    w64 = {k: v.to(torch.float64) for k, v in weights.items()}
    for i, ids in enumerate(prompts):
        logits = forward(w64, config, ids)
        np.save(os.path.join(out, "ref", "%d.npy" % i), logits.numpy())
        seq = list(ids)
        for _ in range(N_NEW):
            seq.append(int(forward(w64, config, seq)[-1].argmax()))
        with open(os.path.join(out, "ref", "%d.ids" % i), "w") as f:
            f.write(" ".join(map(str, ids)) + "\n")
        with open(os.path.join(out, "ref", "%d.greedy" % i), "w") as f:
            f.write(" ".join(map(str, seq[len(ids):])) + "\n")


def normal(shape, std, g):
    return torch.randn(*shape, generator=g) * std


def llama(out, tokenizer, prompts):
    import sentencepiece
    sp = sentencepiece.SentencePieceProcessor(model_file=tokenizer)
    c = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 160,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": sp.get_piece_size() + 24,
         "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": False,
         "hidden_act": "silu", "rope_scaling": None, "bos_token_id": sp.bos_id(), "eos_token_id": sp.eos_id(),
         "torch_dtype": "bfloat16"}
    g = torch.Generator().manual_seed(26)
    C, F, V, K = c["hidden_size"], c["intermediate_size"], c["vocab_size"], 2 * (64 // 4)
    w = {"model.embed_tokens.weight": normal((V, C), 1.0, g), "model.norm.weight": 1 + normal((C,), 0.1, g),
         "lm_head.weight": normal((V, C), 2 / math.sqrt(C), g)}
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        for name, shape in (("self_attn.q_proj", (C, C)), ("self_attn.k_proj", (K, C)), ("self_attn.v_proj", (K, C)),
                            ("self_attn.o_proj", (C, C)), ("mlp.gate_proj", (F, C)), ("mlp.up_proj", (F, C)),
                            ("mlp.down_proj", (C, F))):
            w[p + name + ".weight"] = normal(shape, 1 / math.sqrt(shape[1]), g)
        w[p + "input_layernorm.weight"] = 1 + normal((C,), 0.1, g)
        w[p + "post_attention_layernorm.weight"] = 1 + normal((C,), 0.1, g)
    w = {k: v.to(torch.bfloat16) for k, v in w.items()}
    os.makedirs(out, exist_ok=True)
    names = sorted(w)
    shards = {"model-00001-of-00002.safetensors": names[: len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    for file, part in shards.items():
        write_safetensors(os.path.join(out, file), {n: w[n] for n in part})
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": {n: file for file, part in shards.items() for n in part}}, f, indent=1)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(c, f, indent=1)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"add_bos_token": True, "bos_token": "<s>", "eos_token": "</s>"}, f)
    with open(tokenizer, "rb") as src, open(os.path.join(out, "tokenizer.model"), "wb") as dst:
        dst.write(src.read())
    write_references(out, llama_logits, w, c, [[sp.bos_id()] + sp.encode(p) for p in prompts])


def bytes_to_unicode():
    """GPT-2's spelling of bytes as printable characters (its encoder.py's table)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def gpt2(out, prompts):
    c = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 48, "n_layer": 2, "n_head": 3,
         "n_positions": 96, "n_ctx": 96, "vocab_size": 260, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
         "n_inner": None, "bos_token_id": 256, "eos_token_id": 256, "tie_word_embeddings": True, "torch_dtype": "float16"}
    g = torch.Generator().manual_seed(2)
    C, V, T = c["n_embd"], c["vocab_size"], c["n_positions"]
    w = {"transformer.wte.weight": normal((V, C), 0.3, g), "transformer.wpe.weight": normal((T, C), 0.3, g),
         "transformer.ln_f.weight": 1 + normal((C,), 0.1, g), "transformer.ln_f.bias": normal((C,), 0.1, g)}
    for i in range(c["n_layer"]):
        p = "transformer.h.%d." % i
        for name, shape in (("attn.c_attn", (C, 3 * C)), ("attn.c_proj", (C, C)), ("mlp.c_fc", (C, 4 * C)),
                            ("mlp.c_proj", (4 * C, C))):
            w[p + name + ".weight"] = normal(shape, 2 / math.sqrt(shape[0]), g)  # Conv1D: [in, out]
            w[p + name + ".bias"] = normal((shape[1],), 0.1, g)
        for n in ("ln_1", "ln_2"):
            w[p + n + ".weight"], w[p + n + ".bias"] = 1 + normal((C,), 0.1, g), normal((C,), 0.1, g)
    w = {k: v.to(torch.float16) for k, v in w.items()}
    stored = dict(w)
    for i in range(c["n_layer"]):  # the causal-mask buffers older GPT-2 files carry (no parameter)
        stored["transformer.h.%d.attn.bias" % i] = torch.tril(torch.ones(1, 1, T, T))
    os.makedirs(out, exist_ok=True)
    write_safetensors(os.path.join(out, "model.safetensors"), stored)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(c, f, indent=1)
    spelling = bytes_to_unicode()
    vocab = {spelling[b]: b for b in range(256)}
    vocab["<|endoftext|>"] = 256
    with open(os.path.join(out, "vocab.json"), "w") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n")
    write_references(out, gpt2_logits, w, c, [list(p.encode()) for p in prompts])


def read_directory(d):
    """A Hugging Face directory's tensors as float32 arrays, its safetensors files read by hand (8-byte header length,
    the JSON header, the data): model.safetensors, or the shards model.safetensors.index.json names."""
    index = os.path.join(d, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    out = {}
    for name in files:
        with open(os.path.join(d, name), "rb") as f:
            b = f.read()
        n = int.from_bytes(b[:8], "little")
        header, data = json.loads(b[8:8 + n]), b[8 + n:]
        for key, e in header.items():
            if key == "__metadata__":
                continue
            raw = data[e["data_offsets"][0]:e["data_offsets"][1]]
            if e["dtype"] == "BF16":
                a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
            else:
                a = np.frombuffer(raw, {"F32": "<f4", "F16": "<f2"}[e["dtype"]]).astype(np.float32)
            out[key] = a.reshape(e["shape"])
    return out


def same(a, b, prompts):
    """Directory b (written by ptk convert) holds a's model: the same tensors by name and shape, value for value; the
    config fields of its math; python3-sentencepiece's ids of each prompt with either tokenizer.model; BOS alike."""
    wa, wb = read_directory(a), read_directory(b)
    if set(wa) != set(wb):
        print("FAIL: tensors only in %s: %s; only in %s: %s" % (a, sorted(set(wa) - set(wb)), b, sorted(set(wb) - set(wa))))
        return 1
    for k in sorted(wa):
        if wa[k].shape != wb[k].shape or not np.array_equal(wa[k], wb[k]):
            bad = "shape %s vs %s" % (wa[k].shape, wb[k].shape) if wa[k].shape != wb[k].shape else \
                  "first difference at %s" % (np.argwhere(wa[k] != wb[k])[0],)
            print("FAIL: tensor %s: %s" % (k, bad))
            return 1
    ca, cb = (json.load(open(os.path.join(d, "config.json"))) for d in (a, b))
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "vocab_size", "max_position_embeddings", "rope_theta", "rms_norm_eps", "bos_token_id", "eos_token_id"):
        if not math.isclose(ca[key], cb[key], rel_tol=1e-7):
            print("FAIL: config.json %s: %s, %s" % (key, ca[key], cb[key]))
            return 1
    import sentencepiece
    sa, sb = (sentencepiece.SentencePieceProcessor(model_file=os.path.join(d, "tokenizer.model")) for d in (a, b))
    for p in prompts:
        if sa.encode(p) != sb.encode(p):
            print("FAIL: '%s': ids %s with %s's tokenizer.model, %s with %s's" % (p, sa.encode(p), a, sb.encode(p), b))
            return 1
    ta, tb = (json.load(open(os.path.join(d, "tokenizer_config.json"))) for d in (a, b))
    if ta.get("add_bos_token") != tb.get("add_bos_token"):
        print("FAIL: tokenizer_config.json add_bos_token: %s, %s" % (ta.get("add_bos_token"), tb.get("add_bos_token")))
        return 1
    print("%d tensors equal value for value, the config's fields, the prompts' ids and BOS alike" % len(wa))
    return 0


def reduction_length(config, positions):
    """N below: per layer the attention norm (C), the q, k, v projections (C), the scores (D), the softmax's sum and
    the weighted values (P each), the output projection (C), the MLP norm (C), its first projections (C) and its
    down projection (F); then the final norm (C) and the head (C)."""
    llama = "hidden_size" in config
    C = config["hidden_size"] if llama else config["n_embd"]
    H = config["num_attention_heads"] if llama else config["n_head"]
    L = config["num_hidden_layers"] if llama else config["n_layer"]
    F = config["intermediate_size"] if llama else 4 * C
    return L * (5 * C + C // H + 2 * positions + F) + 2 * C


def compare(ptk_npy, ref_npy, config_json):
    """The bound: ptk's float32 logits against float64 with the same weights. Each logit is a chain of dot products
    and sums; float32 rounding adds at most about u = 2^-24 relative error per term of each (Higham's gamma_n), so
    the logit's error is bounded by u * N * max|logit|, N the sum of the reduction lengths along the path
    (reduction_length)."""
    a, b = np.load(ptk_npy).astype(np.float64), np.load(ref_npy)
    if a.shape != b.shape:
        print("FAIL: logits of shape %s, the reference's %s" % (a.shape, b.shape))
        return 1
    with open(config_json) as f:
        n = reduction_length(json.load(f), b.shape[0])
    bound = 2.0 ** -24 * n * float(np.abs(b).max())
    err = np.abs(a - b)
    worst = np.unravel_index(int(err.argmax()), err.shape)
    print("%.3g (%.3g of the bound %.3g = 2^-24 * N %d * max|logit| %.3g; at position %d, id %d: ptk %.9g, "
          "reference %.9g)" % (err.max(), err.max() / bound, bound, n, np.abs(b).max(), worst[0], worst[1], a[worst],
                               b[worst]))
    return 0 if err.max() <= bound else 1


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "llama":
        llama(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif cmd == "gpt2":
        gpt2(sys.argv[2], sys.argv[3:])
    elif cmd == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3], sys.argv[4]))
    elif cmd == "same":
        sys.exit(same(sys.argv[2], sys.argv[3], sys.argv[4:]))
    else:
        sys.exit("usage: hf_reference.py llama|gpt2|compare|same ...")
