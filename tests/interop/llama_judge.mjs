// llama.cpp (node-llama-cpp's prebuilt CPU binaries) as an independent judge for QuantScope's tests.
//
//   node llama_judge.mjs REQUEST.json > RESULT.json
//
// REQUEST: {"model": "file.gguf",
//           "tokenize": ["text", ...],            // llama.cpp's model.tokenize(text), no special tokens parsed
//           "evaluate": [[id, id, ...], ...],     // each sequence from position 0 in a fresh context
//           "vocabulary": V,                        // rows of the embedding: the length of each distribution
//           "threads": 2}
// RESULT:  {"tokens": [[id, ...], ...],
//           "distributions": [[[p_0, ..., p_{V-1}] per position] per sequence],   // next-token softmax
//           "vocabulary": V, "warnings": ["llama.cpp warning text", ...]}
//
// The distributions are llama.cpp's own softmax of its logits (controlledEvaluate with
// generateNext.probabilities; no sampling options, so nothing is filtered). The KV cache is kept in
// F32 so that the judge computes attention at the precision of the model's weights.
import fs from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const request = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const warnings = [];
const llama = await getLlama({
    gpu: false,
    build: "never",
    logLevel: LlamaLogLevel.warn,
    logger: (level, message) => {
        if (level === LlamaLogLevel.warn || level === LlamaLogLevel.error || level === LlamaLogLevel.fatal)
            warnings.push(String(message).trim());
    }
});
const model = await llama.loadModel({modelPath: request.model, gpuLayers: 0});
const vocabulary = request.vocabulary;

const tokens = (request.tokenize ?? []).map((text) => Array.from(model.tokenize(text)));

const distributions = [];
for (const sequenceTokens of request.evaluate ?? []) {
    // Room beyond the sequence: a context that the last token fills is shifted by node-llama-cpp.
    const size = sequenceTokens.length + 64;
    const context = await model.createContext({
        contextSize: size,
        batchSize: size,
        threads: request.threads ?? 2,
        flashAttention: false,
        experimentalKvCacheKeyType: "F32",
        experimentalKvCacheValueType: "F32"
    });
    const sequence = context.getSequence();
    const outputs = await sequence.controlledEvaluate(sequenceTokens.map((t) => [t, {generateNext: {probabilities: true}}]));
    const rows = outputs.map((output) => {
        const row = new Array(vocabulary).fill(0);
        for (const [token, p] of output.next.probabilities) {
            if (token >= vocabulary) throw new Error(`token ${token} is outside the vocabulary of ${vocabulary}`);
            row[token] = p;
        }
        return row;
    });
    distributions.push(rows);
    await context.dispose();
}

process.stdout.write(JSON.stringify({tokens, distributions, vocabulary, warnings}));
await model.dispose();
await llama.dispose();
