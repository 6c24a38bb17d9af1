#!/bin/bash
# ptk tokenize's command line: encode and decode with a GPT-2-style byte-level pair written here (the 256 byte tokens
# and one merge), and its refusals, each one line on stderr and exit 2: no text, texts and tokenizers that are not
# regular files (/dev/zero, a directory, a fifo), a missing tokenizer, ill-formed UTF-8, ids outside the
# vocabulary, an unsupported tokenizer.json, GGUF files without a tokenizer or cut short, a standard output that
# cannot be written.
# usage: tokenize_cli_test.sh PTK SOURCE_DIR
set -u
ptk=$1 src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
. "$(dirname "$0")/cli_checks.sh"

/usr/bin/python3 - "$dir" <<'PY'
import json, sys
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + n); n += 1
vocab = {chr(c): b for b, c in zip(bs, cs)}
vocab["th"] = 256
json.dump(vocab, open(sys.argv[1] + "/vocab.json", "w"))
open(sys.argv[1] + "/merges.txt", "w").write("#version: 0.2\nt h\n")
PY
[ "$("$ptk" tokenize --tokenizer "$dir" --text "the é")" = "256 101 32 195 169" ] || fail "encode: $("$ptk" tokenize --tokenizer "$dir" --text "the é" 2>&1)"
[ "$("$ptk" tokenize --tokenizer "$dir" --decode --text " 256 101
32 195 169 ")" = "the é" ] || fail "decode"
[ "$("$ptk" tokenize --tokenizer "$dir" --decode --text "195")" = $'\xef\xbf\xbd' ] || fail "decode of half a character is not U+FFFD"
"$ptk" tokenize --help | grep -q -- "--no-parse-special" || fail "--help"
echo "ok: encode, decode (whitespace-separated ids, U+FFFD for half a character), --help"

mkfifo "$dir/fifo"
printf 'bad \xc3(' >"$dir/latin1"
expect_refusal "no text" "give --text or --file" "$ptk" tokenize --tokenizer "$dir"
expect_refusal "text /dev/zero" "not a regular file" "$ptk" tokenize --tokenizer "$dir" --file /dev/zero
expect_refusal "text is a directory" "not a regular file" "$ptk" tokenize --tokenizer "$dir" --file "$dir"
expect_refusal "text is a fifo" "not a regular file" "$ptk" tokenize --tokenizer "$dir" --file "$dir/fifo"
expect_refusal "text not UTF-8" "not UTF-8: byte 4" "$ptk" tokenize --tokenizer "$dir" --file "$dir/latin1"
expect_refusal "tokenizer /dev/zero" "tokenize: /dev/zero: is a character device, not a regular file" "$ptk" tokenize --tokenizer /dev/zero --text x
expect_refusal "tokenizer missing" "no such file" "$ptk" tokenize --tokenizer "$dir/absent" --text x
expect_refusal "tokenizer fifo" "not a regular file" "$ptk" tokenize --tokenizer "$dir/fifo" --text x
expect_refusal "id beyond the vocabulary" "'257' (word 2) is not a token id in .0, 257)" \
  "$ptk" tokenize --tokenizer "$dir" --decode --text "1 257"
expect_refusal "id not a number" "'-1' (word 1) is not a token id" "$ptk" tokenize --tokenizer "$dir" --decode --text "-1"
echo '{"model": {"type": "Unigram", "vocab": []}}' >"$dir/tokenizer.json"
expect_refusal "unsupported tokenizer.json" 'model type "Unigram" is not supported' \
  "$ptk" tokenize --tokenizer "$dir/tokenizer.json" --text x
# A GGUF file's tokenizer (tokenizer.ggml.*): one without it, a truncated one, one that is not a regular file.
cp "$src/fuzz/corpus/gguf/llama_like.gguf" "$dir/none.gguf"
expect_refusal "a GGUF file without a tokenizer" "tokenizer.ggml.model is missing" \
  "$ptk" tokenize --tokenizer "$dir/none.gguf" --text x
head -c 100 "$src/fuzz/corpus/gguf_tokenizer/spm.gguf" >"$dir/cut.gguf"
expect_refusal "a truncated GGUF file" "cut.gguf" "$ptk" tokenize --tokenizer "$dir/cut.gguf" --text x
mkfifo "$dir/fifo.gguf"
expect_refusal "a fifo named .gguf" "not a regular file" "$ptk" tokenize --tokenizer "$dir/fifo.gguf" --text x
[ "$("$ptk" tokenize --tokenizer "$src/fuzz/corpus/gguf_tokenizer/spm.gguf" --text "the")" = "1 259" ] ||
  fail "the SentencePiece seed GGUF does not give BOS and '▁the' for 'the'"
expect_refusal "unknown option" "--frobnicate" "$ptk" tokenize --tokenizer "$dir" --text x --frobnicate
expect_stdout_failure "tokenize" "$ptk" tokenize --tokenizer "$dir/vocab.json" --text "the"
