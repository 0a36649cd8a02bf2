#!/usr/bin/env python3
"""Training throughput of an attention encoder-decoder: chi vs PyTorch, alternating.

Usage: .venv-torch/bin/python benches/torch/seq2seq_speed.py [--threads 1,2] [--rounds 3] [--steps 30]

The model is the one of `chi reproduce nmt-cells` (LSTM): source embedding -> LSTM encoder;
decoder LSTM cell fed [target embedding ; context], the context from Luong "general" attention
queried by the previous decoder state over the encoder states; o = tanh(W_o [h ; c]); logits =
W_s o, on both sides as one product over every step after the decoder loop; mean cross-entropy
over target tokens; Adagrad lr 0.01. Random token data, all sequences
`len` long (no padding). Each round runs chi's example binary
(`cargo build --release -p chi-seq2seq --example seq2seq_speed`) and then the same number of steps in
PyTorch; the table gives the median tokens/s over rounds and the ratio chi / PyTorch (above 1:
chi is faster).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHI = os.path.join(ROOT, "target", "release", "examples", "seq2seq_speed")

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("seq2seq_speed: PyTorch is not installed for %s; run scripts/setup-torch.sh" % sys.executable, file=sys.stderr)
    sys.exit(3)

EOS = 2


class Seq2Seq(nn.Module):
    def __init__(self, vocab, emb, hidden):
        super().__init__()
        self.src_emb = nn.Embedding(vocab, emb)
        self.tgt_emb = nn.Embedding(vocab, emb)
        self.enc = nn.LSTM(emb, hidden, batch_first=True)
        self.dec = nn.LSTMCell(emb + hidden, hidden)
        self.attn = nn.Linear(hidden, hidden, bias=False)  # general score q^T W k
        self.out = nn.Linear(2 * hidden, hidden)
        self.proj = nn.Linear(hidden, vocab)

    def forward(self, src, tgt):
        keys, (h, c) = self.enc(self.src_emb(src))  # [B, S, H]
        h, c = h[0], c[0]
        b, t = tgt.shape
        prev = torch.full((b,), 1, dtype=torch.long)  # BOS
        attentional = []
        for i in range(t):
            q = self.attn(h)  # [B, H]
            alpha = torch.softmax(torch.bmm(keys, q.unsqueeze(2)).squeeze(2), dim=1)
            ctx = torch.bmm(alpha.unsqueeze(1), keys).squeeze(1)
            h, c = self.dec(torch.cat([self.tgt_emb(prev), ctx], 1), (h, c))
            o = torch.tanh(self.out(torch.cat([h, ctx], 1)))
            attentional.append(o)
            prev = tgt[:, i]
        # As chi does: the output projection once over every step (teacher forcing).
        logits = self.proj(torch.stack(attentional, 1))
        return nn.functional.cross_entropy(logits.reshape(b * t, -1), tgt.reshape(-1))


def torch_run(threads, steps, vocab, emb, hidden, batch, length):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    m = Seq2Seq(vocab, emb, hidden)
    opt = torch.optim.Adagrad(m.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(7)

    def sample():
        x = torch.randint(4, vocab, (batch, length), generator=g)
        x[:, -1] = EOS
        return x

    data = [(sample(), sample()) for _ in range(steps + 3)]

    def step(s, t):
        opt.zero_grad()
        loss = m(s, t)
        loss.backward()
        opt.step()
        return loss.item()

    for s, t in data[:3]:
        step(s, t)
    start = time.perf_counter()
    for s, t in data[3:]:
        step(s, t)
    secs = time.perf_counter() - start
    return steps * batch * length / secs


def chi_run(threads, steps, vocab, emb, hidden, batch, length):
    out = subprocess.run([CHI, "--threads", str(threads), "--steps", str(steps), "--vocab", str(vocab), "--emb", str(emb),
                          "--hidden", str(hidden), "--batch", str(batch), "--len", str(length)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["tokens_per_sec"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--vocab", type=int, default=5000)
    ap.add_argument("--emb", type=int, default=100)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--len", type=int, default=20)
    a = ap.parse_args()
    if not os.path.exists(CHI):
        print("seq2seq_speed: %s missing; run cargo build --release -p chi-seq2seq --example seq2seq_speed" % CHI, file=sys.stderr)
        sys.exit(2)
    print("| threads | chi tokens/s (median) | PyTorch %s tokens/s (median) | chi / PyTorch | rounds |" % torch.__version__)
    print("|---|---|---|---|---|")
    for th in [int(x) for x in a.threads.split(",")]:
        c, p = [], []
        for _ in range(a.rounds):
            c.append(chi_run(th, a.steps, a.vocab, a.emb, a.hidden, a.batch, a.len))
            p.append(torch_run(th, a.steps, a.vocab, a.emb, a.hidden, a.batch, a.len))
        mc, mp = statistics.median(c), statistics.median(p)
        print("| %d | %.0f (%.0f–%.0f) | %.0f (%.0f–%.0f) | %.2f | %d |" % (th, mc, min(c), max(c), mp, min(p), max(p), mc / mp, a.rounds))


if __name__ == "__main__":
    main()
