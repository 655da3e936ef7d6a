# Portcullis task runner (https://just.systems). `just --list` shows the recipes.
# Fuzzing recipes need the nightly toolchain and cargo-fuzz
# (`rustup toolchain install nightly`, `cargo install --locked cargo-fuzz`).

set shell := ["bash", "-euo", "pipefail", "-c"]
# Recipe arguments are also "$1", "$2", ... so paths and summaries with spaces survive.
set positional-arguments := true

# List the recipes.
default:
    @just --list

# Run every test in the workspace (regressions/ is replayed here).
test:
    cargo test --workspace

# Fuzz one target for SECS seconds, seeded from corpus/TARGET (new inputs go to fuzz/corpus/TARGET).
fuzz TARGET SECS="60":
    mkdir -p fuzz/corpus/{{TARGET}} corpus/{{TARGET}}
    # The dictionary and limits come from xtask, which the nightly also uses.
    cargo +nightly fuzz run {{TARGET}} fuzz/corpus/{{TARGET}} corpus/{{TARGET}} -- $(cargo xtask fuzz-flags run) -max_total_time={{SECS}} -print_final_stats=1

# Fuzz every target for a share of BUDGET, merge coverage into corpus/, report crashes.
nightly BUDGET="10m":
    cargo xtask nightly --budget {{BUDGET}}

# Mutation-test wire, gateway, wrap, exec and the CLI's audit code (extra flags: --shard K/N, --jobs N, --file GLOB); writes target/nightly/mutants.{md,json}.
mutants *FLAGS:
    cargo xtask mutants "$@"

# Mutation-test only the code in scope changed since BASE (what CI runs); fails on survivors.
mutants-diff BASE="main" *FLAGS:
    cargo xtask mutants --diff "$@"

# Minimize corpus/TARGET in place, folding in fuzz/corpus/TARGET first (files are renamed to their SHA-1).
cmin TARGET:
    mkdir -p corpus/{{TARGET}} fuzz/corpus/{{TARGET}}
    cp -R fuzz/corpus/{{TARGET}}/. corpus/{{TARGET}}/
    cargo +nightly fuzz cmin {{TARGET}} corpus/{{TARGET}} -- $(cargo xtask fuzz-flags cmin)

# Minimize a crashing input; TARGET defaults to the folder holding it (…/artifacts/<target>/crash-…).
tmin ARTIFACT TARGET="":
    #!/usr/bin/env bash
    set -euo pipefail
    artifact="$1"
    target="${2:-$(basename "$(dirname "$artifact")")}"
    if [ ! -f "fuzz/fuzz_targets/$target.rs" ]; then
        echo "cannot tell the fuzz target of $artifact (got '$target'); run: just tmin $artifact <target>" >&2
        exit 1
    fi
    # `--runs N -- <libFuzzer limits>`, the nightly's minimization settings.
    cargo +nightly fuzz tmin "$target" "$artifact" $(cargo xtask fuzz-flags tmin)

# Plant each bug of bugbench/ in a scratch worktree: does `cargo test` catch it, and how fast does each fuzz target? (--bug NAME repeats; nightly job, not .ci/run)
bugbench *FLAGS:
    cargo xtask bugbench "$@"

# Copy a crashing input into regressions/<target>/ with a sidecar (extra flags: --summary, --source, --name, --target).
promote ARTIFACT *FLAGS:
    cargo xtask promote "$@"

# Line coverage of TARGET over its corpora (needs llvm-22: `apt-get install llvm-22`, or LLVM_BIN=<dir with llvm-cov>).
coverage TARGET:
    #!/usr/bin/env bash
    set -euo pipefail
    host="$(rustc +nightly -vV | sed -n 's/^host: //p')"
    llvm_bin="${LLVM_BIN:-/usr/lib/llvm-22/bin}"
    if [ ! -x "$llvm_bin/llvm-cov" ]; then
        # Fallback: `rustup component add llvm-tools --toolchain nightly`.
        llvm_bin="$(rustc +nightly --print sysroot)/lib/rustlib/$host/bin"
    fi
    if [ ! -x "$llvm_bin/llvm-cov" ] || [ ! -x "$llvm_bin/llvm-profdata" ]; then
        echo "llvm-cov/llvm-profdata not found: apt-get install llvm-22 (rustc's LLVM is 22), or set LLVM_BIN" >&2
        exit 1
    fi
    mkdir -p corpus/{{TARGET}} fuzz/corpus/{{TARGET}}
    cargo +nightly fuzz coverage --llvm-path "$llvm_bin" --target-dir target/fuzz-coverage \
        {{TARGET}} corpus/{{TARGET}} fuzz/corpus/{{TARGET}}
    bin="target/fuzz-coverage/$host/release/{{TARGET}}"
    profile="fuzz/coverage/{{TARGET}}/coverage.profdata"
    ignore='/\.cargo/registry/|/rustc/|/rustlib/|fuzz/fuzz_targets/'
    "$llvm_bin/llvm-cov" report "$bin" -instr-profile="$profile" -ignore-filename-regex="$ignore"
    "$llvm_bin/llvm-cov" show "$bin" -instr-profile="$profile" -ignore-filename-regex="$ignore" \
        -format=html -output-dir="target/coverage/{{TARGET}}"
    echo "HTML report: target/coverage/{{TARGET}}/index.html"

# Line and region coverage of every crate (scrubber, audit code, wrap driver apart) by `cargo test` and by each target's corpus (target/nightly/coverage.md).
coverage-all *FLAGS:
    cargo xtask coverage "$@"

# The inbound boundary against serde_json (three mixes), latency and startup; last line pipeline_vs_serde_value=<ratio>.
bench *FLAGS:
    cargo xtask bench "$@"

# Real MCP clients (Python SDK, TypeScript SDK v1/v2, Inspector CLI, rmcp) against the gateway; CHECKS default to all.
interop *CHECKS:
    interop/run "$@"
