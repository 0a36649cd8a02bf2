#!/usr/bin/env python3
"""chi-words vs gensim 4.4: word2vec trained on the same corpus with the same hyperparameters.

Usage:
  benches/gensim/side_by_side.py --corpus corpus.txt [--models sgns,cbow,sg-hs] [--threads 1,2]
      [--seeds 1,2,3] [--epochs 5] [--dim 100] [--window 5] [--min-count 5] [--sample 1e-3]
      [--negative 5] [--glove] [--glove-epochs 15] [--chi PATH] [--json]

The corpus is a text file with one sentence per line, tokens separated by spaces, already
lower-cased (`chi embed corpus --corpus brown+sotu+shakespeare --out corpus.txt` writes Brown +
State of the Union + Shakespeare that way). gensim reads it with `LineSentence`, chi with
`Text::read`: the same sentences, cut at 10,000 tokens.

For every model and thread count, each seed is one round in which chi (the example binary
`target/release/examples/train`, built by `cargo build -p chi-words --release --example train`)
and gensim run one after the other, the order alternating between rounds. Times are the
training loop alone (gensim: the `train()` call after `build_vocab()`; chi: `train_seconds`).
Words/s counts the same numerator for both, as gensim does: corpus tokens (before the min-count
cut and subsampling) × epochs / training seconds. The learning rate is passed to both: 0.025
for skip-gram, 0.05 for CBOW (word2vec's defaults; gensim's own default for CBOW is 0.025).

Both programs' vectors are scored by gensim's own evaluators (`evaluate_word_pairs` on
WordSim353 and SimLex-999, `evaluate_word_analogies` on questions-words.txt, from gensim's test
data; chi's vectors are written in the word2vec text format and loaded with
`KeyedVectors.load_word2vec_format`), so the scores are measured identically.

With `--glove`, chi's GloVe (no gensim counterpart) is also timed at each thread count:
co-occurrence counting seconds and training co-occurrence entries/s.

gensim: if it cannot be imported and benches/gensim/.venv exists (made by
benches/gensim/setup-venv.sh), the script re-runs itself with that venv's Python; otherwise it
says so and exits 3.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VENV_PY = os.path.join(HERE, ".venv", "bin", "python")

try:
    import gensim
    from gensim.models import Word2Vec, KeyedVectors
    from gensim.models.word2vec import LineSentence
    from gensim.test.utils import datapath
except ImportError:
    # (The venv's python is a symlink to the system one, so compare prefixes, not executables.)
    if os.path.exists(VENV_PY) and os.path.realpath(sys.prefix) != os.path.realpath(os.path.join(HERE, ".venv")) and not os.environ.get("CHI_SIDE_BY_SIDE_REEXEC"):
        os.environ["CHI_SIDE_BY_SIDE_REEXEC"] = "1"
        os.execv(VENV_PY, [VENV_PY, os.path.abspath(__file__)] + sys.argv[1:])
    print("gensim is not installed: run benches/gensim/setup-venv.sh (gensim 4.4.0 in benches/gensim/.venv)", file=sys.stderr)
    sys.exit(3)

MODELS = {"sgns": dict(sg=1, hs=0), "cbow": dict(sg=0, hs=0), "sg-hs": dict(sg=1, hs=1, negative=0), "cbow-hs": dict(sg=0, hs=1, negative=0)}
KEYS = ("seconds", "words_per_sec", "wordsim353", "simlex999", "analogies")


def alpha(model):
    return 0.025 if MODELS[model]["sg"] else 0.05


def scores(kv):
    import logging
    logging.disable(logging.WARNING)
    ws = kv.evaluate_word_pairs(datapath("wordsim353.tsv"))[1][0]
    sl = kv.evaluate_word_pairs(datapath("simlex999.txt"))[1][0]
    an = kv.evaluate_word_analogies(datapath("questions-words.txt"))[0]
    return {"wordsim353": ws, "simlex999": sl, "analogies": an}


def run_gensim(a, model, threads, seed):
    kw = dict(vector_size=a.dim, window=a.window, min_count=a.min_count, sample=a.sample, epochs=a.epochs, workers=threads, seed=seed,
              negative=a.negative, alpha=alpha(model), min_alpha=1e-4)
    kw.update(MODELS[model])
    m = Word2Vec(**kw)
    m.build_vocab(LineSentence(a.corpus))
    import time
    t = time.perf_counter()
    m.train(LineSentence(a.corpus), total_examples=m.corpus_count, epochs=m.epochs)
    secs = time.perf_counter() - t
    return {"seconds": secs, "words_per_sec": m.corpus_total_words * a.epochs / secs, **scores(m.wv)}


def run_chi(a, model, threads, seed, out):
    cmd = [a.chi, "--corpus", a.corpus, "--model", model, "--threads", str(threads), "--dim", str(a.dim), "--window", str(a.window),
           "--min-count", str(a.min_count), "--sample", str(a.sample), "--epochs", str(a.epochs), "--negative", str(a.negative),
           "--alpha", str(alpha(model)), "--seed", str(seed), "--out", out]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    kv = KeyedVectors.load_word2vec_format(out, binary=False)
    # chi's own words/s counts in-vocabulary words; recount all corpus tokens as gensim does.
    return {"seconds": r["train_seconds"], "words_per_sec": r["tokens"] * a.epochs / r["train_seconds"], **scores(kv)}


def run_glove(a, threads, seed):
    cmd = [a.chi, "--corpus", a.corpus, "--model", "glove", "--threads", str(threads), "--dim", str(a.dim), "--min-count", str(a.min_count),
           "--epochs", str(a.glove_epochs), "--seed", str(seed)]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def ms(xs):
    return (statistics.mean(xs), statistics.stdev(xs) if len(xs) > 1 else 0.0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", required=True)
    p.add_argument("--models", default="sgns,cbow,sg-hs")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--window", type=int, default=5)
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--sample", type=float, default=1e-3)
    p.add_argument("--negative", type=int, default=5)
    p.add_argument("--glove", action="store_true")
    p.add_argument("--glove-epochs", type=int, default=15)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    p.add_argument("--chi", default=os.path.join(target, "release", "examples", "train"))
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    if not os.path.exists(a.chi):
        print(f"{a.chi} missing: cargo build -p chi-words --release --example train", file=sys.stderr)
        sys.exit(2)
    seeds = [int(s) for s in a.seeds.split(",")]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "chi.txt")
        for model in a.models.split(","):
            for threads in [int(t) for t in a.threads.split(",")]:
                runs = {"chi": [], "gensim": []}
                for r, seed in enumerate(seeds):
                    order = ["chi", "gensim"] if r % 2 == 0 else ["gensim", "chi"]
                    for who in order:
                        runs[who].append(run_chi(a, model, threads, seed, out) if who == "chi" else run_gensim(a, model, threads, seed))
                row = {"model": model, "threads": threads, "seeds": seeds, "runs": runs}
                for who in ("chi", "gensim"):
                    for k in KEYS:
                        row[f"{who}_{k}"] = ms([x[k] for x in runs[who]])
                ratio = [c["words_per_sec"] / g["words_per_sec"] for c, g in zip(runs["chi"], runs["gensim"])]
                row["speedup"] = ms(ratio)
                results.append(row)
                if not a.json:
                    print(f"{model:6} {threads} thr  wall s chi {row['chi_seconds'][0]:.2f}±{row['chi_seconds'][1]:.2f} gensim {row['gensim_seconds'][0]:.2f}±{row['gensim_seconds'][1]:.2f}  "
                          f"words/s chi {row['chi_words_per_sec'][0]:.0f} gensim {row['gensim_words_per_sec'][0]:.0f}  chi/gensim {row['speedup'][0]:.2f}±{row['speedup'][1]:.2f}  "
                          f"WS353 {row['chi_wordsim353'][0]:.3f}/{row['gensim_wordsim353'][0]:.3f}  SimLex {row['chi_simlex999'][0]:.3f}/{row['gensim_simlex999'][0]:.3f}  "
                          f"analogies {row['chi_analogies'][0]:.3f}/{row['gensim_analogies'][0]:.3f}  (chi/gensim, mean of {len(seeds)} seeds)", flush=True)
        glove = []
        if a.glove:
            for threads in [int(t) for t in a.threads.split(",")]:
                g = [run_glove(a, threads, seed) for seed in seeds]
                row = {"threads": threads, "entries": g[0]["entries"], "count_seconds": ms([x["count_seconds"] for x in g]),
                       "train_seconds": ms([x["train_seconds"] for x in g]), "entries_per_sec": ms([x["entries_per_sec"] for x in g])}
                glove.append(row)
                if not a.json:
                    print(f"glove  {threads} thr  {row['entries']} entries  counting {row['count_seconds'][0]:.2f} s  training {row['train_seconds'][0]:.2f}±{row['train_seconds'][1]:.2f} s  "
                          f"{row['entries_per_sec'][0]:.0f}±{row['entries_per_sec'][1]:.0f} entries/s", flush=True)
    if a.json:
        print(json.dumps({"gensim": gensim.__version__, "seeds": seeds, "epochs": a.epochs, "results": results, "glove": glove}, indent=1))


if __name__ == "__main__":
    main()
