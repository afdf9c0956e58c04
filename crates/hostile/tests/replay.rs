//! Every fuzz target on stable Rust, in `cargo test`: its checked-in seed
//! corpus (`/fuzz/corpus/TARGET`, which also holds what the cargo-fuzz
//! campaigns found worth keeping, and `/fuzz/regressions/TARGET`, the
//! inputs of crashes fixed), then a fixed number of mutations of it from a
//! fixed-seed generator (bit flips, byte changes, insertions, deletions,
//! truncations, splices with another input, and the bytes a decoder looks
//! for: newlines, braces, Telnet IAC, length fields at their extremes).
//! Deterministic: a failure names the input's bytes, and the same run
//! fails the same way. The long campaigns are cargo-fuzz's (fuzz/README.md).
//!
//! `STACKBENCH_BLESS=1` rewrites the seeds (`seed-*` files) from
//! `stackbench_hostile::seeds`; `STACKBENCH_FUZZ_CASES=N` changes the
//! number of mutations per target (default 2,000), and
//! `STACKBENCH_FUZZ_SECONDS=S` stops each target's mutations after S s
//! (a long run without libFuzzer: with `--nocapture` each target says how
//! many it ran).

use std::path::{Path, PathBuf};

use stackbench_hostile::{seeds, Target, TARGETS};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The inputs checked in for `target`: its corpus and its regressions.
fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut inputs = Vec::new();
    for dir in ["fuzz/corpus", "fuzz/regressions"] {
        let Ok(entries) = std::fs::read_dir(root().join(dir).join(target)) else {
            continue;
        };
        for e in entries {
            let path = e.expect("a corpus entry").path();
            inputs.push((path.clone(), std::fs::read(&path).expect("a corpus file")));
        }
    }
    inputs.sort();
    inputs
}

/// xorshift64*: a fixed-seed generator with no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes decoders look for: line ends, JSON's and TOML's punctuation,
/// Telnet's IAC, SB, SE, EOR, and the ends of length fields.
const INTERESTING: &[u8] = &[
    b'\n', b'\r', b'{', b'}', b'"', b'[', b']', b'=', b':', b',', 0xFF, 0xFA, 0xF0, 0xEF, 0x00,
    0x7F, 0x80, 0xA0, 0xB0, 0xC0, 0xD0, 0xE0,
];

/// One mutation of `input` (or of a splice with `other`).
fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(8) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = rng.next() as u8;
            }
            2 => out.insert(at, INTERESTING[rng.below(INTERESTING.len())]),
            3 if at < out.len() => {
                let end = (at + 1 + rng.below(16)).min(out.len());
                out.drain(at..end);
            }
            4 => out.truncate(at),
            5 => {
                let from = rng.below(other.len() + 1);
                let len = rng.below(other.len() - from + 1);
                out.splice(at..at, other[from..from + len].iter().copied());
            }
            6 if at + 4 <= out.len() => {
                let v: [u8; 4] =
                    [[0xFF; 4], [0; 4], [0x7F, 0xFF, 0xFF, 0xFF], [0, 0, 0, 8]][rng.below(4)];
                out[at..at + 4].copy_from_slice(&v);
            }
            _ => {
                let len = rng.below(8);
                let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                out.splice(at..at, bytes);
            }
        }
    }
    out
}

fn cases() -> usize {
    std::env::var("STACKBENCH_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000)
}

/// Runs `input` through `target`, naming it if it panics.
fn run_one(target: &Target, what: &str, input: &[u8]) {
    let outcome = std::panic::catch_unwind(|| (target.run)(input));
    if outcome.is_err() {
        panic!(
            "fuzz target {} panicked on {what} ({} bytes): {:?}\n(save it under fuzz/regressions/{}/ \
             and replay it with `cargo test -p stackbench-hostile --test replay {}`)",
            target.name,
            input.len(),
            String::from_utf8_lossy(input),
            target.name,
            target.name
        );
    }
}

fn replay(name: &str) {
    let target = stackbench_hostile::target(name).expect("a target");
    let inputs = corpus(name);
    assert!(
        !inputs.is_empty(),
        "fuzz/corpus/{name} is empty: write the seeds with STACKBENCH_BLESS=1 cargo test -p \
         stackbench-hostile --test replay"
    );
    for (path, input) in &inputs {
        run_one(target, &path.display().to_string(), input);
    }
    // The seed depends on the target only: each target's run is the same
    // whatever else runs.
    let mut rng = Rng(name.bytes().fold(0x9E37_79B9_7F4A_7C15, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3)
    }));
    let budget = std::env::var("STACKBENCH_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .map(std::time::Duration::from_secs_f64);
    let started = std::time::Instant::now();
    let mut ran = 0;
    for case in 0..cases() {
        if budget.is_some_and(|b| started.elapsed() > b) {
            break;
        }
        ran += 1;
        let input = &inputs[rng.below(inputs.len())].1;
        let other = &inputs[rng.below(inputs.len())].1;
        let mutated = mutate(&mut rng, input, other);
        run_one(target, &format!("mutation {case}"), &mutated);
    }
    println!(
        "{name}: {} corpus inputs, {ran} mutations in {:.1} s",
        inputs.len(),
        started.elapsed().as_secs_f64()
    );
}

macro_rules! targets {
    ($($name:ident)*) => {
        $(#[test] fn $name() { replay(stringify!($name)); })*

        #[test]
        fn every_target_is_replayed() {
            let tested = [$(stringify!($name)),*];
            let all: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
            assert_eq!(tested.to_vec(), all, "a target without its test here, or one gone");
        }
    };
}

targets! {
    control agent_wire token_admit token_prove http1_client http1_server tn3270_client
    tn3270_server tn3270_screen amqp_client amqp_server study_file lab_file record
}

/// `STACKBENCH_BLESS=1`: writes the seeds; otherwise checks that each one
/// is checked in. Not that it is byte for byte what its maker makes now:
/// an AMQP dialogue carries ids of a process-wide counter.
#[test]
fn seeds_are_checked_in() {
    let bless = std::env::var_os("STACKBENCH_BLESS").is_some();
    let mut stale = Vec::new();
    for s in seeds::all(&root()) {
        assert!(
            stackbench_hostile::target(s.target).is_some(),
            "{}",
            s.target
        );
        let path = root()
            .join("fuzz/corpus")
            .join(s.target)
            .join(format!("seed-{}", s.name));
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &s.bytes).unwrap();
        } else if !path.is_file() {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "seeds missing (write them with STACKBENCH_BLESS=1 cargo test -p \
         stackbench-hostile --test replay seeds): {stale:#?}"
    );
}
