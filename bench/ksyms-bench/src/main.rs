//! Loads a kallsyms file and resolves a list of addresses with one of three
//! implementations, printing timings for bench/resolve.sh:
//!
//!   ksyms-bench gen KALLSYMS N OUT      N addresses inside functions, one per line
//!   ksyms-bench MODE KALLSYMS ADDRS     MODE: ours | naive | blazesym
//!
//! Every mode reads the name it found (its length and first byte), as a
//! resolver that prints names must.
//!
//! Output: `MODE load_ms resolve_ms resolved offset_sum`, in CPU time of the
//! process (user + system, CLOCK_PROCESS_CPUTIME_ID): on a shared machine
//! wall time mostly measures the other processes. offset_sum, the sum of
//! every address's offset into its symbol, must agree across modes: it shows
//! they found the same symbol starts.

use std::path::Path;

use ksyms::kallsyms::{self, Hidden};
use ksyms::{SymbolKind, Table};

/// CPU time of this process so far, in milliseconds.
fn cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}

/// Reads a name so that no mode can skip fetching it.
fn touch(name: &str) {
    std::hint::black_box((name.len(), name.as_bytes().first()));
}

fn read_addrs(path: &str) -> Vec<u64> {
    std::fs::read_to_string(path)
        .expect("read addresses")
        .lines()
        .filter_map(|l| u64::from_str_radix(l.trim(), 16).ok())
        .collect()
}

/// Deterministic addresses: a fixed LCG picks a function and an offset in it.
fn generate(kallsyms: &str, n: usize, out: &str) {
    let table = Table::new(kallsyms::read(Path::new(kallsyms), Hidden::Error).expect("kallsyms"));
    let funcs: Vec<(u64, u64)> = table
        .iter()
        .filter(|s| s.kind == SymbolKind::Function && s.module.is_none())
        .filter_map(|s| Some((s.addr, s.size?)))
        .filter(|&(_, size)| size > 0)
        .collect();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let mut text = String::with_capacity(n * 17);
    for _ in 0..n {
        let (addr, size) = funcs[next() as usize % funcs.len()];
        text.push_str(&format!("{:x}\n", addr + next() % size));
    }
    std::fs::write(out, text).expect("write addresses");
}

/// What a first implementation usually looks like: a String per line,
/// split_whitespace, sort, binary search.
struct Naive {
    syms: Vec<(u64, String)>,
}

impl Naive {
    fn load(path: &str) -> Naive {
        let text = std::fs::read_to_string(path).expect("kallsyms");
        let mut syms = Vec::new();
        for line in text.lines() {
            let mut f = line.split_whitespace();
            let (Some(a), Some(_), Some(name)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            if let Ok(a) = u64::from_str_radix(a, 16) {
                syms.push((a, name.to_string()));
            }
        }
        syms.sort_by_key(|s| s.0);
        Naive { syms }
    }

    fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        let i = self.syms.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        let (a, name) = &self.syms[i];
        Some((name, addr - a))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| {
        args.get(i).map(String::as_str).unwrap_or_else(|| {
            eprintln!("usage: ksyms-bench gen KALLSYMS N OUT | ours|naive|blazesym KALLSYMS ADDRS");
            std::process::exit(2)
        })
    };
    let mode = arg(1);
    if mode == "gen" {
        generate(arg(2), arg(3).parse().expect("N"), arg(4));
        return;
    }
    let (kallsyms_path, addrs) = (arg(2), read_addrs(arg(3)));
    let t0 = cpu_ms();
    let (t1, resolved, offset_sum) = match mode {
        "ours" => {
            let table = Table::new(
                kallsyms::read(Path::new(kallsyms_path), Hidden::Error).expect("kallsyms"),
            );
            let t1 = cpu_ms();
            let (mut n, mut sum) = (0usize, 0u64);
            for &a in &addrs {
                if let Some(hit) = table.lookup(a) {
                    n += 1;
                    sum += hit.offset;
                    touch(hit.symbol.name);
                }
            }
            (t1, n, sum)
        }
        "naive" => {
            let table = Naive::load(kallsyms_path);
            let t1 = cpu_ms();
            let (mut n, mut sum) = (0usize, 0u64);
            for &a in &addrs {
                if let Some((name, off)) = table.lookup(a) {
                    n += 1;
                    sum += off;
                    touch(name);
                }
            }
            (t1, n, sum)
        }
        "blazesym" => {
            use blazesym::symbolize::source::{Kernel, Source};
            use blazesym::symbolize::{Input, Symbolized, Symbolizer};
            use blazesym::MaybeDefault;
            let symbolizer = Symbolizer::new();
            let src = Source::Kernel(Kernel {
                kallsyms: MaybeDefault::Some(kallsyms_path.into()),
                vmlinux: MaybeDefault::None,
                kaslr_offset: Some(0),
                debug_syms: false,
                ..Default::default()
            });
            // blazesym parses kallsyms on its first request and caches it:
            // one address, timed as the load.
            let first = addrs.first().copied().unwrap_or(0);
            symbolizer
                .symbolize(&src, Input::AbsAddr(&[first]))
                .expect("blazesym load");
            let t1 = cpu_ms();
            let out = symbolizer
                .symbolize(&src, Input::AbsAddr(&addrs))
                .expect("blazesym");
            let (mut n, mut sum) = (0usize, 0u64);
            for s in &out {
                if let Symbolized::Sym(sym) = s {
                    n += 1;
                    sum += sym.offset as u64;
                    touch(&sym.name);
                }
            }
            (t1, n, sum)
        }
        other => {
            eprintln!("unknown mode {other}");
            std::process::exit(2)
        }
    };
    let t2 = cpu_ms();
    println!(
        "{mode} {:.2} {:.2} {resolved} {offset_sum}",
        t1 - t0,
        t2 - t1
    );
}
