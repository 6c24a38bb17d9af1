// Greedy tokens by llama.cpp (the npm package node-llama-cpp, its prebuilt CPU build): the model's continuation of a
// prompt given as ids, and llama.cpp's own tokenization of the prompt's text.
// usage: node llama_cpp_reference.mjs PACKAGE_DIR MODEL.gguf N "ID ID ..." TEXT
// prints: line 1, the N new ids; line 2, llama.cpp's ids of TEXT (no BOS, special tokens as text). TEXT "@FILE": the
// file's text; N 0: no context, no generation (line 1 empty).
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const [pkg, modelPath, n, promptIds, textArg] = process.argv.slice(2);
const text = textArg.startsWith("@") ? fs.readFileSync(textArg.slice(1), "utf8") : textArg;
const {getLlama, LlamaLogLevel} = await import(pathToFileURL(path.join(pkg, "node_modules/node-llama-cpp/dist/index.js")).href);
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath});
if (Number(n) === 0) {
  console.log("");
  console.log(model.tokenize(text, false).join(" "));
  await model.dispose();
  process.exit(0);
}
const context = await model.createContext({contextSize: model.trainContextSize, batchSize: 512, threads: 2});
const sequence = context.getSequence();
const out = [];
for await (const token of sequence.evaluate(promptIds.split(" ").map(Number), {temperature: 0})) {
  out.push(token);
  if (out.length >= Number(n)) break;
}
console.log(out.join(" "));
console.log(model.tokenize(text, false).join(" "));
await context.dispose();
await model.dispose();
