#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (fuzz/corpus/<target>/): small valid inputs of each format, written here
independently of ptk (NumPy, Python's json and zlib, Debian's spm_train), so that the fuzzer starts from inputs that
reach deep into each reader. Run from the repository root with Debian's python3; the output is committed."""
import io, json, os, struct, subprocess, tempfile, zlib

import numpy as np

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    os.makedirs(os.path.join(root, target), exist_ok=True)
    with open(os.path.join(root, target, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def npy(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


put("npy", "f32_2x3.npy", npy(np.arange(6, dtype="<f4").reshape(2, 3)))
put("npy", "f16_3.npy", npy(np.array([1.5, -np.inf, np.nan], dtype="<f2")))
put("npy", "u16_bf16_2x2.npy", npy(np.array([[0x3F80, 0x7FC0], [0x0001, 0xFF80]], dtype="<u2")))
put("npy", "i32_ids.npy", npy(np.array([[1, 2, 3]], dtype="<i4")))
put("npy", "i64_ids.npy", npy(np.array([7, 0], dtype="<i8")))
put("npy", "f32_scalar.npy", npy(np.float32(3.0).reshape(())))


def safetensors(tensors, metadata=None, stamp=False):
    header, data = {}, b""
    for name, a in tensors.items():
        raw = a.astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    if stamp:  # ptk's two checksums (io/safetensors.hpp): of the data, then of the canonical header without its own
        m = header["__metadata__"]
        m["crc32"] = "%08x" % zlib.crc32(data)
        m["header_crc32"] = "%08x" % zlib.crc32(json.dumps(header, separators=(",", ":"), sort_keys=True).encode())
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


w = np.linspace(-1, 1, 12, dtype="<f4")
put("safetensors", "plain.safetensors", safetensors({"a": w.reshape(3, 4), "b": np.zeros(0, "<f4")}))
put("safetensors", "stamped.safetensors", safetensors({"wte.weight": w.reshape(4, 3)}, {"step": "3"}, stamp=True))

def gguf(kv, tensors, alignment=32):
    """GGUF v3 from its specification: kv = [(key, type id, packed value)], tensors = [(name, ne, ggml type, data)]."""
    s = lambda x: struct.pack("<Q", len(x)) + x
    b = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, t, v in kv:
        b += s(key.encode()) + struct.pack("<I", t) + v
    offset, data = 0, b""
    for name, ne, t, raw in tensors:
        b += s(name.encode()) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        b += struct.pack("<IQ", t, offset)
        data += raw + b"\0" * (-len(raw) % alignment)
        offset = len(data)
    return b + b"\0" * (-len(b) % alignment) + data


strings = lambda xs: struct.pack("<IQ", 8, len(xs)) + b"".join(struct.pack("<Q", len(x)) + x for x in xs)
q8 = struct.pack("<e", 0.5) + bytes(range(32))
q4 = struct.pack("<e", 0.25) + bytes(range(16))
put("gguf", "llama_like.gguf", gguf(
    [("general.architecture", 8, struct.pack("<Q", 5) + b"llama"), ("llama.block_count", 4, struct.pack("<I", 1)),
     ("tokenizer.ggml.tokens", 9, strings([b"<unk>", b"<s>", b"\xe2\x96\x81the"])),
     ("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, 3) + struct.pack("<3f", 0, 0, -1)),
     ("general.alignment", 4, struct.pack("<I", 64))],
    [("token_embd.weight", [4, 3], 0, np.arange(12, dtype="<f4").tobytes()),
     ("blk.0.attn_q.weight", [32, 2], 8, q8 * 2), ("blk.0.ffn_up.weight", [32, 1], 2, q4),
     ("output_norm.weight", [4], 1, np.ones(4, "<f2").tobytes()), ("bf", [2], 30, b"\x80\x3f\x00\x40")],
    alignment=64))

byte_alphabet = {}
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b), cs.append(256 + n)
        n += 1
vocab = {chr(c): b for b, c in zip(bs, cs)}
merges = [("t", "h"), ("th", "e"), ("\u0120", "the"), ("e", "e")]
for a, b in merges:
    vocab[a + b] = len(vocab)
vocab["<|endoftext|>"] = len(vocab)
put("gpt2_vocab", "tiny", json.dumps(vocab) + "\0#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))

model = {"type": "BPE", "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]}
added = [{"id": vocab["<|endoftext|>"], "content": "<|endoftext|>", "special": True}]
put("tokenizer_json", "gpt2_style.json", json.dumps({
    "model": model, "added_tokens": added, "normalizer": None,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
    "decoder": {"type": "ByteLevel"}, "post_processor": {"type": "ByteLevel"}}))
put("tokenizer_json", "llama3_style.json", json.dumps({
    "model": dict(model, merges=[[a, b] for a, b in merges], ignore_merges=True), "added_tokens": added,
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": r"(?i:'s|'t)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|\s+(?!\S)|\s+"},
         "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]},
    "post_processor": {"type": "Sequence", "processors": [
        {"type": "ByteLevel"},
        {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                                                  {"Sequence": {"id": "A", "type_id": 0}}]}]}}))

text = "In the beginning God created the heaven and the earth. And the earth was without form, and void.\n" * 20
with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, "t.txt"), "w") as f:
        f.write(text)
    for kind in ("unigram", "bpe"):
        subprocess.run(["spm_train", f"--input={d}/t.txt", f"--model_prefix={d}/{kind}", "--vocab_size=320",
                        f"--model_type={kind}", "--byte_fallback=true", "--hard_vocab_limit=false", "--normalization_rule_name=identity",
                        "--minloglevel=2"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        put("sentencepiece", f"{kind}.model", open(f"{d}/{kind}.model", "rb").read())

# GGUF files holding only a tokenizer (tokenizer.ggml.*, as llama.cpp's converter writes them): a SentencePiece BPE
# vocabulary (<unk>, <s>, </s>, the 256 byte tokens, pieces scored by merge rank) and GPT-2's byte-level BPE.
u32 = lambda v: struct.pack("<I", v)
gstr = lambda x: struct.pack("<Q", len(x)) + x
pieces = [b"<unk>", b"<s>", b"</s>"] + [b"<0x%02X>" % i for i in range(256)] + \
         ["\u2581the", "\u2581t", "he", "th", "\u2581", "t", "h", "e"]
pieces = [p if isinstance(p, bytes) else p.encode() for p in pieces]
types = [2, 3, 3] + [6] * 256 + [1] * 8
scores = [0.0] * 259 + [-float(i) for i in range(8)]
put("gguf_tokenizer", "spm.gguf", gguf(
    [("tokenizer.ggml.model", 8, gstr(b"llama")), ("tokenizer.ggml.tokens", 9, strings(pieces)),
     ("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, len(scores)) + struct.pack(f"<{len(scores)}f", *scores)),
     ("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, len(types)) + struct.pack(f"<{len(types)}i", *types)),
     ("tokenizer.ggml.bos_token_id", 4, u32(1)), ("tokenizer.ggml.eos_token_id", 4, u32(2)),
     ("tokenizer.ggml.add_space_prefix", 7, b"\x01")], []))
gpt2_tokens = sorted(vocab, key=vocab.get)
gpt2_types = [3 if t == "<|endoftext|>" else 1 for t in gpt2_tokens]
put("gguf_tokenizer", "gpt2.gguf", gguf(
    [("tokenizer.ggml.model", 8, gstr(b"gpt2")), ("tokenizer.ggml.pre", 8, gstr(b"gpt2")),
     ("tokenizer.ggml.tokens", 9, strings([t.encode() for t in gpt2_tokens])),
     ("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, len(gpt2_types)) + struct.pack(f"<{len(gpt2_types)}i", *gpt2_types)),
     ("tokenizer.ggml.merges", 9, strings([f"{a} {b}".encode() for a, b in merges])),
     ("tokenizer.ggml.bos_token_id", 4, u32(vocab["<|endoftext|>"])), ("tokenizer.ggml.add_bos_token", 7, b"\x00")], []))

for i, line in enumerate(["Hello, world's 42 \U0001F389", "aaaaaaaaaaaaaaaa  the the\tthe\n\n",
                          "x<|endoftext|>y<|end|>z", "\u00e9\u0301 \u0663 \u180e\u0085\ufeff", "bad \xff"]):
    put("bpe_encode", f"text{i}", line.encode("utf-8", "surrogateescape") if i < 4 else b"bad \xff\xc3(")
# Hugging Face config.json files of the three architectures ptk reads (nn/hf_config.hpp), shaped as the real ones.
put("hf_config", "llama.json", json.dumps({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 160,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1024,
    "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": False,
    "hidden_act": "silu", "rope_scaling": None, "bos_token_id": 1, "eos_token_id": [2, 3], "head_dim": 16}))
put("hf_config", "mistral.json", json.dumps({
    "architectures": ["MistralForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 32768,
    "sliding_window": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0}))
put("hf_config", "gpt2.json", json.dumps({
    "architectures": ["GPT2LMHeadModel"], "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024,
    "vocab_size": 50257, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "n_inner": None}))
print("seeds written under", root)
