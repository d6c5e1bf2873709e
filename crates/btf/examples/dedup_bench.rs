//! Times `btf::dedup` alone (loading and writing excluded), for comparison
//! with libbpf's btf__dedup as timed by tests/oracle/libbpf_dedup.c:
//!
//! ```text
//! cc -O2 -o libbpf_dedup crates/btf/tests/oracle/libbpf_dedup.c -lbpf
//! ./libbpf_dedup concat vv.btf /sys/kernel/btf/vmlinux /sys/kernel/btf/vmlinux
//! ./libbpf_dedup dedup vv.libbpf vv.btf
//! cargo run --release -p btfkit-btf --example dedup_bench -- vv.btf [BASE] [RUNS]
//! ```
//!
//! Prints wall time and this thread's CPU time per run: on a shared machine
//! the CPU time is the steadier number.

use std::path::Path;
use std::time::Instant;

#[path = "support/thread_cpu.rs"]
mod thread_cpu;
use thread_cpu::thread_cpu;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(input) = args.get(1) else {
        eprintln!("usage: dedup_bench IN.btf [BASE] [RUNS]");
        std::process::exit(2);
    };
    let base = args.get(2).filter(|b| !b.is_empty()).map(Path::new);
    let runs: u32 = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(3);
    for _ in 0..runs {
        let mut btf = btf::load_file(Path::new(input), base).expect("load the input");
        let (wall, cpu) = (Instant::now(), thread_cpu());
        let stats = btf::dedup::dedup_with_stats(&mut btf, &btf::dedup::DedupOptions::default())
            .expect("dedup");
        println!(
            "dedup: {:.3} s wall, {:.3} s cpu ({} types -> {})",
            wall.elapsed().as_secs_f64(),
            thread_cpu() - cpu,
            stats.types_in,
            stats.types_out
        );
    }
}
