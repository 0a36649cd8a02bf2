#!/usr/bin/env python3
"""Writes the two small example datasets the repository ships (models/chi/examples/data/):

* fruit.csv: 180 fruits (apple, orange, lemon) with weight, diameter, a colour and a skin
  texture; a few values are missing (NA), as in real measurements. Classes overlap, so a
  model cannot be perfect.
* reviews/{positive,negative}/NNN.txt: 100 short product reviews per class, built from
  phrase lists; some reviews mix praise and complaint, and about one in twenty carries the
  other class's words (the label noise real annotations have), so no model is perfect.

Seeded: running it again writes the same bytes.
"""
import os
import random

root = os.path.join(os.path.dirname(__file__), "..", "models", "chi", "examples", "data")
rng = random.Random(20261125)

os.makedirs(root, exist_ok=True)
fruit = {
    # weight g (mean, sd), diameter cm (mean, sd), colours, textures
    "apple": ((170, 30), (7.5, 0.8), ["red", "green", "yellow"], ["smooth", "smooth", "waxy"]),
    "orange": ((190, 35), (8.0, 0.9), ["orange", "orange", "yellow"], ["dimpled", "dimpled", "smooth"]),
    "lemon": ((110, 20), (6.0, 0.6), ["yellow", "yellow", "green"], ["dimpled", "waxy", "smooth"]),
}
rows = []
for name, ((wm, ws), (dm, ds), colours, textures) in fruit.items():
    for _ in range(60):
        w = f"{rng.gauss(wm, ws):.1f}"
        d = f"{rng.gauss(dm, ds):.2f}"
        c = rng.choice(colours)
        t = rng.choice(textures)
        if rng.random() < 0.03:
            w = "NA"
        if rng.random() < 0.03:
            t = ""
        rows.append((w, d, c, t, name))
rng.shuffle(rows)
with open(os.path.join(root, "fruit.csv"), "w") as f:
    f.write("weight_g,diameter_cm,colour,texture,fruit\n")
    for r in rows:
        f.write(",".join(r) + "\n")

subjects = ["The battery", "This kettle", "The blender", "The lamp", "This backpack", "The headphones", "The keyboard", "This jacket", "The tent", "The coffee grinder"]
good = ["works perfectly", "is sturdy and well made", "exceeded my expectations", "is quiet and fast", "looks great", "was easy to set up", "is worth every penny", "feels solid"]
bad = ["broke after a week", "is flimsy and cheap", "stopped working", "is loud and slow", "looks nothing like the photos", "was a pain to set up", "is a waste of money", "feels fragile"]
good_end = ["Highly recommended.", "I would buy it again.", "Five stars.", "Love it!", "Great value."]
bad_end = ["Avoid it.", "I returned it.", "One star.", "Very disappointed.", "Not worth it."]
mixed_good = ["The box was damaged, but", "Delivery was late, but", "It is a bit heavy, but"]
mixed_bad = ["It looks nice, but", "The price is fair, but", "Setup was easy, but"]
classes = [("positive", good, good_end, mixed_good), ("negative", bad, bad_end, mixed_bad)]
for k, (label, phrases, ends, mixed) in enumerate(classes):
    d = os.path.join(root, "reviews", label)
    os.makedirs(d, exist_ok=True)
    for i in range(100):
        if rng.random() < 0.05:
            _, phrases, ends, mixed = classes[1 - k]
        else:
            _, phrases, ends, mixed = classes[k]
        s = rng.choice(subjects)
        p = rng.choice(phrases)
        text = f"{s} {p}. {rng.choice(ends)}"
        if rng.random() < 0.25:
            text = f"{rng.choice(mixed)} {s.lower()} {p}. {rng.choice(ends)}"
        with open(os.path.join(d, f"{i:03d}.txt"), "w") as f:
            f.write(text + "\n")
print("wrote", root)
