#!/usr/bin/env python3
"""Trains gensim 4.4 word2vec on a corpus file and writes the vectors in the word2vec text format.

Usage:
  benches/gensim/train_gensim.py --corpus FILE --model sgns|cbow|sg-hs|cbow-hs --out VECTORS.txt
      [--dim 100] [--window 5] [--min-count 5] [--sample 1e-3] [--negative 5] [--epochs 5]
      [--alpha A] [--min-alpha 1e-4] [--seed 1] [--workers 1]

The corpus has one sentence per line, tokens separated by spaces (gensim's LineSentence, which
cuts lines at 10,000 tokens, as chi-words' Text does). Prints one JSON object: the training
loop's wall time (`train()` alone, after `build_vocab()`), corpus words processed and words/s,
the vocabulary size and gensim's version. `chi reproduce word-vectors` calls it once per model
and seed; run it with PYTHONHASHSEED set for a reproducible run with one worker.
Exit status 3 when gensim cannot be imported.
"""
import argparse
import json
import sys
import time

try:
    import gensim
    from gensim.models import Word2Vec
    from gensim.models.word2vec import LineSentence
except ImportError as e:
    print(f"gensim is not importable ({e}); benches/gensim/setup-venv.sh installs gensim 4.4.0", file=sys.stderr)
    sys.exit(3)

MODELS = {"sgns": dict(sg=1, hs=0), "cbow": dict(sg=0, hs=0), "sg-hs": dict(sg=1, hs=1), "cbow-hs": dict(sg=0, hs=1)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", required=True)
    p.add_argument("--model", required=True, choices=sorted(MODELS))
    p.add_argument("--out", required=True)
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--window", type=int, default=5)
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--sample", type=float, default=1e-3)
    p.add_argument("--negative", type=int, default=5)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--alpha", type=float, default=None)
    p.add_argument("--min-alpha", type=float, default=1e-4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", type=int, default=1)
    a = p.parse_args()
    kw = dict(vector_size=a.dim, window=a.window, min_count=a.min_count, sample=a.sample, epochs=a.epochs,
              workers=a.workers, seed=a.seed, min_alpha=a.min_alpha, **MODELS[a.model])
    # Hierarchical softmax alone: no negative sampling on top of it (chi's sg-hs has none).
    kw["negative"] = 0 if MODELS[a.model]["hs"] else a.negative
    if a.alpha is not None:
        kw["alpha"] = a.alpha
    m = Word2Vec(**kw)
    m.build_vocab(LineSentence(a.corpus))
    t = time.perf_counter()
    m.train(LineSentence(a.corpus), total_examples=m.corpus_count, epochs=m.epochs)
    secs = time.perf_counter() - t
    m.wv.save_word2vec_format(a.out, binary=False)
    words = m.corpus_total_words * a.epochs
    print(json.dumps({"gensim": gensim.__version__, "seconds": secs, "words": words, "words_per_sec": words / secs,
                      "vocab": len(m.wv), "alpha": m.alpha}))


if __name__ == "__main__":
    main()
