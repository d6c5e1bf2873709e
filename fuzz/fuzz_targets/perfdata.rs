//! perf.data on arbitrary bytes: the header, attrs and feature sections,
//! every record, the timeline built from them and lookups in it. Nothing may
//! panic; bad input is an error or a skip.

#![no_main]

use libfuzzer_sys::fuzz_target;
use perfdata::timeline::{Options, Timeline};
use perfdata::PerfData;

fuzz_target!(|data: &[u8]| {
    let Ok(perf) = PerfData::from_bytes(data.to_vec()) else {
        return;
    };
    for w in &perf.features.warnings {
        let _ = w.to_string();
    }
    for ev in perf.records() {
        if let Err(e) = ev {
            let _ = e.to_string();
        }
    }
    let t = Timeline::build(&perf, Options { samples: true });
    for w in t.tracker.table.warnings() {
        let _ = w.to_string();
    }
    for s in &t.samples {
        let _ = t.tracker.table.lookup(s.ip, s.time.unwrap_or(0));
    }
});
