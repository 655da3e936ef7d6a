#!/bin/bash -eu
# Builds every cargo-fuzz target into $OUT for ClusterFuzzLite / OSS-Fuzz:
# the binary, a dictionary and a seed corpus per target.
#
# In the builder image `cargo` is nightly and $SRC/portcullis is the checkout.
# Locally, `cargo xtask clusterfuzzlite-check` runs this with SRC, OUT and WORK
# in a temp dir and RUSTUP_TOOLCHAIN=nightly.

cd "$SRC/portcullis"

# -O --debug-assertions: optimized, with overflow checks and debug_assert!s.
# (In coverage builds the image's cargo wrapper replaces this command.)
cargo fuzz build -O --debug-assertions

triple="${FUZZ_TRIPLE:-x86_64-unknown-linux-gnu}"
build_dir="fuzz/target/$triple/release"

# Stage a target's seeds (corpus/<target>/* and regressions/<target>/*.bin;
# regressions/ also holds .toml sidecars) and zip them flat into $2.
zip_seeds() {
    local target="$1" zipfile="$2"
    local stage="$seeds_root/$target"
    local f
    rm -rf "$stage" "$zipfile"
    mkdir -p "$stage"
    for f in "corpus/$target"/*; do
        if [ -f "$f" ]; then cp "$f" "$stage/"; fi
    done
    for f in "regressions/$target"/*.bin; do
        if [ -f "$f" ]; then cp "$f" "$stage/regression-$(basename "$f")"; fi
    done
    if [ -z "$(ls -A "$stage")" ]; then return 0; fi
    if command -v zip >/dev/null 2>&1; then
        zip -q -j "$zipfile" "$stage"/*
    else
        python3 - "$zipfile" "$stage" <<'PY'
import os, sys, zipfile
zip_path, stage = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as z:
    for name in sorted(os.listdir(stage)):
        z.write(os.path.join(stage, name), name)
PY
    fi
}

seeds_root="${WORK:-$(mktemp -d)}/seeds"

for source in fuzz/fuzz_targets/*.rs; do
    target="$(basename "$source" .rs)"
    cp "$build_dir/$target" "$OUT/$target"
    cp fuzz/dict/mcp.dict "$OUT/$target.dict"
    printf '[libfuzzer]\nmax_len = 8192\n' > "$OUT/$target.options"
    zip_seeds "$target" "$OUT/${target}_seed_corpus.zip"
done
