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

# Zip the files of the given directories, flat, into $1 (nothing if no files).
zip_seeds() {
    local zipfile="$1"
    shift
    local files=()
    local dir f
    for dir in "$@"; do
        [ -d "$dir" ] || continue
        for f in "$dir"/*; do
            [ -f "$f" ] || continue
            # regressions/ also holds .toml sidecars: seed only the inputs.
            case "$dir" in regressions/*) [[ "$f" == *.bin ]] || continue ;; esac
            files+=("$f")
        done
    done
    [ "${#files[@]}" -gt 0 ] || return 0
    rm -f "$zipfile"
    if command -v zip >/dev/null 2>&1; then
        zip -q -j "$zipfile" "${files[@]}"
    else
        python3 - "$zipfile" "${files[@]}" <<'PY'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    for path in sys.argv[2:]:
        z.write(path, os.path.basename(path))
PY
    fi
}

for source in fuzz/fuzz_targets/*.rs; do
    target="$(basename "$source" .rs)"
    cp "$build_dir/$target" "$OUT/$target"
    cp fuzz/dict/mcp.dict "$OUT/$target.dict"
    printf '[libfuzzer]\nmax_len = 65536\n' > "$OUT/$target.options"
    zip_seeds "$OUT/${target}_seed_corpus.zip" "corpus/$target" "regressions/$target"
done
