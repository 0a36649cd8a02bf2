#!/usr/bin/env python3
"""chi-words vs gensim: word2vec trained on the same corpus with the same hyperparameters.

Usage:
  benches/gensim/side_by_side.py --corpus brown.txt [--models sgns,cbow,sg-hs] [--threads 1,2]
      [--rounds 1] [--epochs 5] [--dim 100] [--window 5] [--min-count 5] [--sample 1e-3]
      [--negative 5] [--seed 1] [--json]

The corpus is a text file with one sentence per line, tokens separated by spaces, already
lower-cased (gensim reads it with `LineSentence`, chi with `Text::read`: the same sentences,
cut at 10,000 tokens). For every round, model and thread count, chi (the example binary
`target/release/examples/train`, built by `cargo build -p chi-words --release --example train`)
and gensim run one after the other, the order alternating between rounds. Times are the
training loop alone (gensim: the `train()` call after `build_vocab()`; chi: `train_seconds`),
medians over rounds; the ratio is gensim / chi (above 1: chi is faster).

Both models' vectors are scored by gensim's own evaluators (`evaluate_word_pairs` on
WordSim353 and SimLex-999, `evaluate_word_analogies` on questions-words.txt, from gensim's
test data; chi's vectors are written in the word2vec text format and loaded with
`KeyedVectors.load_word2vec_format`), so the scores are measured identically.

gensim is optional: `pip install gensim==4.4.0`; without it this script says so and exits 3.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHI = os.path.join(ROOT, "target", "release", "examples", "train")

try:
    import gensim
    from gensim.models import Word2Vec, KeyedVectors
    from gensim.models.word2vec import LineSentence
    from gensim.test.utils import datapath
except ImportError:
    print("gensim is not installed (pip install gensim==4.4.0)", file=sys.stderr)
    sys.exit(3)

MODELS = {"sgns": dict(sg=1, hs=0), "cbow": dict(sg=0, hs=0), "sg-hs": dict(sg=1, hs=1, negative=0), "cbow-hs": dict(sg=0, hs=1, negative=0)}


def scores(kv):
    import logging
    logging.disable(logging.WARNING)
    ws = kv.evaluate_word_pairs(datapath("wordsim353.tsv"))[1][0]
    sl = kv.evaluate_word_pairs(datapath("simlex999.txt"))[1][0]
    an = kv.evaluate_word_analogies(datapath("questions-words.txt"))[0]
    return {"wordsim353": ws, "simlex999": sl, "analogies": an}


def run_gensim(a, model, threads):
    kw = dict(vector_size=a.dim, window=a.window, min_count=a.min_count, sample=a.sample, epochs=a.epochs, workers=threads, seed=a.seed, negative=a.negative)
    kw.update(MODELS[model])
    m = Word2Vec(**kw)
    m.build_vocab(LineSentence(a.corpus))
    t = time.perf_counter()
    m.train(LineSentence(a.corpus), total_examples=m.corpus_count, epochs=m.epochs)
    secs = time.perf_counter() - t
    return {"seconds": secs, "words_per_sec": m.corpus_total_words * a.epochs / secs, **scores(m.wv)}


def run_chi(a, model, threads, out):
    cmd = [CHI, "--corpus", a.corpus, "--model", model, "--threads", str(threads), "--dim", str(a.dim), "--window", str(a.window),
           "--min-count", str(a.min_count), "--sample", str(a.sample), "--epochs", str(a.epochs), "--negative", str(a.negative),
           "--seed", str(a.seed), "--out", out]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    kv = KeyedVectors.load_word2vec_format(out, binary=False)
    return {"seconds": r["train_seconds"], "words_per_sec": r["words_per_sec"], **scores(kv)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", required=True)
    p.add_argument("--models", default="sgns,cbow,sg-hs")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--window", type=int, default=5)
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--sample", type=float, default=1e-3)
    p.add_argument("--negative", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    if not os.path.exists(CHI):
        print(f"{CHI} missing: cargo build -p chi-words --release --example train", file=sys.stderr)
        sys.exit(2)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "chi.txt")
        for model in a.models.split(","):
            for threads in [int(t) for t in a.threads.split(",")]:
                runs = {"chi": [], "gensim": []}
                for r in range(a.rounds):
                    order = ["chi", "gensim"] if r % 2 == 0 else ["gensim", "chi"]
                    for who in order:
                        runs[who].append(run_chi(a, model, threads, out) if who == "chi" else run_gensim(a, model, threads))
                row = {"model": model, "threads": threads}
                for who in ("chi", "gensim"):
                    for k in ("seconds", "words_per_sec", "wordsim353", "simlex999", "analogies"):
                        row[f"{who}_{k}"] = statistics.median(x[k] for x in runs[who])
                row["speedup"] = row["gensim_seconds"] / row["chi_seconds"]
                results.append(row)
                if not a.json:
                    print(f"{model:8} {threads} thr  gensim {row['gensim_seconds']:7.2f} s  chi {row['chi_seconds']:7.2f} s  gensim/chi {row['speedup']:.2f}  "
                          f"WS353 {row['gensim_wordsim353']:.3f}/{row['chi_wordsim353']:.3f}  SimLex {row['gensim_simlex999']:.3f}/{row['chi_simlex999']:.3f}  "
                          f"analogies {row['gensim_analogies']:.3f}/{row['chi_analogies']:.3f}  (gensim/chi)", flush=True)
    if a.json:
        print(json.dumps({"gensim": gensim.__version__, "rounds": a.rounds, "results": results}, indent=1))


if __name__ == "__main__":
    main()
