//! `--fuzz DURATION`: after a valid handshake, feed batches of mutated
//! frames drawn from the corpus, one process per batch, then a liveness
//! `ping`. A failing batch is minimized to the shortest failing frame
//! sequence and saved as a script `check --script` replays.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::judge::{self, Bounds, Failure, Mode};
use super::launch::Launch;
use super::matrix::probes;
use super::script::{Era, Step, handshake, ping, render_script};

/// Frames per batch.
const BATCH: usize = 8;
/// Seed lines kept from the corpus (the corpus is large; a few thousand
/// lines cover its shapes).
const MAX_SEEDS: usize = 4000;
/// Longest seed line kept.
const MAX_SEED_BYTES: usize = 64 * 1024;
/// Failures minimized and saved per fuzz pass; later ones are counted.
const MAX_SAVED: usize = 5;

/// Parse `30s`, `500ms`, `2m` or a plain number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text, "s"), |i| text.split_at(i));
    let n: u64 = number
        .parse()
        .map_err(|_| format!("not a duration: {text:?}"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        _ => Err(format!("unknown unit in {text:?} (use ms, s or m)")),
    }
}

/// Seed lines: every line of every file in `corpus` and of the `.bin`
/// files under the `regressions/` folder beside it (when it is the
/// workspace's `corpus/stdin_bytes`), else the built-in hard cases.
pub fn seeds(corpus: Option<&Path>) -> (Vec<Vec<u8>>, String) {
    let mut lines = Vec::new();
    let mut files = Vec::new();
    if let Some(dir) = corpus {
        files.extend(files_in(dir, |_| true));
        if let Some(root) = dir.parent().and_then(Path::parent) {
            for folder in files_in(&root.join("regressions"), |_| true) {
                files.extend(files_in(&folder, |p| {
                    p.extension().is_some_and(|e| e == "bin")
                }));
            }
        }
    }
    files.sort();
    for file in &files {
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        for line in bytes.split(|&b| b == b'\n') {
            if !line.is_empty() && line.len() <= MAX_SEED_BYTES && lines.len() < MAX_SEEDS {
                lines.push(line.to_vec());
            }
        }
    }
    if lines.is_empty() {
        let built_in = probes()
            .into_iter()
            .map(|mut p| {
                if p.last() == Some(&b'\n') {
                    p.pop();
                }
                p
            })
            .collect();
        return (built_in, "built-in hard cases".into());
    }
    let described = format!(
        "{} lines from {} files under {} and regressions/",
        lines.len(),
        files.len(),
        corpus.map_or_else(String::new, |d| d.display().to_string())
    );
    (lines, described)
}

fn files_in(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| keep(p))
        .collect()
}

/// xorshift64*: deterministic for a given `--seed`, no dependency.
#[derive(Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap_or(0)
    }
}

const INTERESTING: &[u8] = b"\"{}[]\\,:\x00\xff\xc3\r 0-e.n";

/// One mutated frame (newline-terminated).
fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut line = seeds[rng.below(seeds.len())].clone();
    for _ in 0..=rng.below(3) {
        let len = line.len().max(1);
        match rng.below(9) {
            0 if !line.is_empty() => {
                let i = rng.below(line.len());
                line[i] ^= 1 << rng.below(8);
            }
            1 if !line.is_empty() => {
                let i = rng.below(line.len());
                line[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 => {
                let i = rng.below(len);
                line.insert(i.min(line.len()), INTERESTING[rng.below(INTERESTING.len())]);
            }
            3 if line.len() > 1 => {
                let a = rng.below(line.len());
                let b = (a + 1 + rng.below(16)).min(line.len());
                line.drain(a..b);
            }
            4 if !line.is_empty() => {
                let a = rng.below(line.len());
                let b = (a + 1 + rng.below(32)).min(line.len());
                let copy = line[a..b].to_vec();
                line.splice(a..a, copy);
            }
            5 => {
                let other = &seeds[rng.below(seeds.len())];
                let cut = rng.below(line.len() + 1);
                let from = rng.below(other.len() + 1);
                line.truncate(cut);
                line.extend_from_slice(&other[from..]);
            }
            6 if line.first() == Some(&b'{') => {
                // A duplicate key: the classic strict/lenient disagreement.
                line.splice(1..1, br#""jsonrpc":"2.0","#.iter().copied());
            }
            7 => {
                line.insert(0, b'[');
                line.push(b']');
            }
            _ => line.truncate(rng.below(len)),
        }
    }
    line.retain(|&b| b != b'\n');
    line.push(b'\n');
    line
}

/// A replayable script: handshake, frames, liveness ping.
fn batch_script(era: Era, frames: &[Vec<u8>]) -> Vec<Step> {
    let mut steps = handshake(era);
    steps.extend(frames.iter().cloned().map(Step::Send));
    steps.push(Step::Send(ping(era)));
    steps
}

/// A saved failure.
#[derive(Debug)]
pub struct Found {
    pub failure: Failure,
    pub script: PathBuf,
    pub frames: usize,
}

/// What a fuzz pass did.
#[derive(Debug, Default)]
pub struct Summary {
    pub batches: usize,
    pub frames: usize,
    pub found: Vec<Found>,
    /// Failing batches beyond the ones saved.
    pub more_failures: usize,
    pub seeds: String,
}

/// Fuzz for `duration`. `Err` only when the command cannot be launched.
#[expect(
    clippy::too_many_arguments,
    reason = "one call site; the options are the CLI's"
)]
pub fn fuzz(
    launch: &Launch,
    era: Era,
    bounds: &Bounds,
    duration: Duration,
    corpus: Option<&Path>,
    seed: u64,
    out: &Path,
    minimize_budget: Duration,
) -> std::io::Result<Summary> {
    let (seeds, described) = seeds(corpus);
    let mut summary = Summary {
        seeds: described,
        ..Summary::default()
    };
    let mut rng = Rng::new(seed);
    let deadline = Instant::now() + duration;
    let mut minimizing = Duration::ZERO;
    while Instant::now() < deadline {
        let frames: Vec<Vec<u8>> = (0..BATCH).map(|_| mutate(&mut rng, &seeds)).collect();
        let outcome = judge::run(
            launch,
            &batch_script(era, &frames),
            Mode::Hostile,
            bounds,
            None,
        )?;
        summary.batches += 1;
        summary.frames += frames.len();
        let Some(first) = outcome.failures.into_iter().next() else {
            continue;
        };
        if summary.found.len() >= MAX_SAVED {
            summary.more_failures += 1;
            continue;
        }
        // One budget for every minimization, so a pass that fails often
        // still ends near its duration.
        let started = Instant::now();
        let budget = minimize_budget.saturating_sub(minimizing);
        let (frames, failure) = minimize(launch, era, bounds, frames, first, budget)?;
        minimizing += started.elapsed();
        let script = out.join(format!("fuzz-failure-{}.ndjson", summary.found.len() + 1));
        std::fs::write(&script, render_script(&batch_script(era, &frames)))?;
        summary.found.push(Found {
            failure,
            script,
            frames: frames.len(),
        });
    }
    Ok(summary)
}

/// Drop frames while the same check still fails (one-at-a-time removal,
/// repeated to a fixed point or until the budget runs out).
fn minimize(
    launch: &Launch,
    era: Era,
    bounds: &Bounds,
    mut frames: Vec<Vec<u8>>,
    mut failure: Failure,
    budget: Duration,
) -> std::io::Result<(Vec<Vec<u8>>, Failure)> {
    let deadline = Instant::now() + budget;
    let check = failure.check;
    let mut changed = true;
    while changed && frames.len() > 1 {
        changed = false;
        let mut i = 0;
        while i < frames.len() && frames.len() > 1 {
            if Instant::now() >= deadline {
                return Ok((frames, failure));
            }
            let mut fewer = frames.clone();
            fewer.remove(i);
            let outcome = judge::run(
                launch,
                &batch_script(era, &fewer),
                Mode::Hostile,
                bounds,
                None,
            )?;
            if let Some(f) = outcome.failures.into_iter().find(|f| f.check == check) {
                frames = fewer;
                failure = f;
                changed = true;
            } else {
                i += 1;
            }
        }
    }
    Ok((frames, failure))
}
