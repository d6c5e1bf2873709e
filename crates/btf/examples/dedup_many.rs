//! Times `btf::dedup::dedup_owned` over many inputs, the way the encoder
//! runs it: e.g. the inputs of the 26 segment dedups and of the final
//! dedup of `btfkit encode vmlinux`, each written out with
//! `Btf::to_bytes` just before its dedup. An input whose file name ends in
//! `-k.btf` is deduplicated with `keep_strings` (the encoder's segments).
//!
//! ```text
//! RUNS=3 cargo run --release -p btfkit-btf --example dedup_many -- DIR/*.btf
//! ```
//!
//! Prints, per run, the CPU time of this thread in the `-k` dedups and in
//! the others, and a hash of all outputs (to check that a change keeps the
//! bytes). The inputs are loaded once and copied before each run.

use std::hash::{Hash, Hasher};
use std::path::Path;

#[path = "support/thread_cpu.rs"]
mod thread_cpu;
use thread_cpu::thread_cpu;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: [RUNS=3] dedup_many IN.btf...");
        std::process::exit(2);
    }
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let inputs: Vec<(btf::Btf, bool)> = args
        .iter()
        .map(|a| {
            let btf = btf::load_file(Path::new(a), None).unwrap_or_else(|e| {
                eprintln!("{a}: {e}");
                std::process::exit(1);
            });
            (btf, a.ends_with("-k.btf"))
        })
        .collect();
    for _ in 0..runs {
        let copies: Vec<_> = inputs.iter().map(|(b, k)| (b.clone(), *k)).collect();
        let mut hash = std::collections::hash_map::DefaultHasher::new();
        let (mut kept, mut others) = (0.0, 0.0);
        for (btf, keep_strings) in copies {
            let opts = btf::dedup::DedupOptions {
                keep_strings,
                ..Default::default()
            };
            let cpu = thread_cpu();
            let out = btf::dedup::dedup_owned(btf, &opts).unwrap_or_else(|e| {
                eprintln!("dedup: {e}");
                std::process::exit(1);
            });
            let spent = thread_cpu() - cpu;
            if keep_strings {
                kept += spent;
            } else {
                others += spent;
            }
            out.to_bytes().hash(&mut hash);
        }
        println!(
            "keep_strings dedups {kept:.3} s cpu, others {others:.3} s cpu, outputs {:016x}",
            hash.finish()
        );
    }
}
