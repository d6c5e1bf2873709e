//! The CPU time of the calling thread, for the dedup examples: on a
//! shared machine it is steadier than the wall time.

/// CPU time of the calling thread, in seconds (Linux schedstat, no unsafe).
pub fn thread_cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e9)
}
