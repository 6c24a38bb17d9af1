// llama.cpp's prefill and decode speed (the npm package node-llama-cpp, its prebuilt CPU build) on a GGUF file, for
// scripts/mistral7b_sweep.sh: the prompt's ids are evaluated in one batch (prefill, up to the first new token), then
// N - 1 more tokens are drawn greedily, one evaluation each (decode).
// usage: node llama_cpp_speed.mjs PACKAGE_DIR MODEL.gguf THREADS N "ID ID ..."
// prints one line: "prefill: P tokens in X ms (Y tokens/s); decode: N-1 tokens in X ms (Y tokens/s)", as ptk generate.
import path from "node:path";
import {pathToFileURL} from "node:url";

const [pkg, modelPath, threads, n, promptIds] = process.argv.slice(2);
const {getLlama, LlamaLogLevel} = await import(pathToFileURL(path.join(pkg, "node_modules/node-llama-cpp/dist/index.js")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath, useMmap: true});
const prompt = promptIds.split(" ").map(Number);
const context = await model.createContext({contextSize: prompt.length + Number(n) + 8, batchSize: 512,
                                           threads: Number(threads)});
const sequence = context.getSequence();
const rate = (tokens, ms) => `${tokens} tokens in ${ms.toFixed(1)} ms (${(tokens / (ms / 1e3)).toFixed(2)} tokens/s)`;
let start = performance.now(), firstAt = 0, count = 0;
for await (const token of sequence.evaluate(prompt, {temperature: 0})) {
  if (++count === 1) firstAt = performance.now();
  if (count >= Number(n)) break;
}
const end = performance.now();
console.log(`prefill: ${rate(prompt.length, firstAt - start)}; decode: ${rate(count - 1, end - firstAt)}`);
await context.dispose();
await model.dispose();
