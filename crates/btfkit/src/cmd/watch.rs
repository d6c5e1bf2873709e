//! `btfkit watch [--duration S] [--json]`: kernel symbols coming and going,
//! live. One perf event per online CPU reports each KSYMBOL and BPF_EVENT;
//! each is printed as it arrives (a JSON object per line with --json) until
//! Ctrl-C or the end of the duration.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use perfdata::dynsyms::tag_text;
use perfdata::live::{stop_on_interrupt, Listener};
use perfdata::records::{ksym_type, BpfEvent, Event, Record};
use perfdata::timeline::Tracker;
use perfdata::{format_time, Result as PerfResult};
use serde_json::{json, Value};

/// How long one wait lasts at most: the bound on noticing the end of the
/// duration (Ctrl-C interrupts the wait at once).
const POLL: Duration = Duration::from_millis(200);

#[derive(clap::Args)]
pub struct WatchArgs {
    /// Stop after S seconds (default: until Ctrl-C)
    #[arg(long, value_name = "S")]
    duration: Option<f64>,
    /// One JSON object per line
    #[arg(long)]
    json: bool,
}

pub fn run(args: WatchArgs) -> anyhow::Result<ExitCode> {
    let duration = match args.duration {
        Some(s) if !(s.is_finite() && s >= 0.0) => {
            anyhow::bail!("--duration must be a number of seconds, not {s}")
        }
        Some(s) => Some(Duration::from_secs_f64(s)),
        None => None,
    };
    let stop = stop_on_interrupt();
    let mut listener = Listener::open().context("cannot listen for kernel symbol changes")?;
    // On stderr so that stdout stays only events; tests wait for this line.
    eprintln!(
        "btfkit: watching kernel symbols on {} CPUs{}",
        listener.cpus().len(),
        duration.map_or_else(
            || " until interrupted".to_owned(),
            |d| format!(" for {:.1} s", d.as_secs_f64())
        )
    );
    let deadline = duration.map(|d| Instant::now() + d);
    let mut printer = Printer {
        json: args.json,
        tracker: Tracker::new(),
        out: std::io::stdout().lock(),
        failed: None,
    };
    while !stop.load(Ordering::SeqCst) {
        let wait = match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left.min(POLL),
                _ => break,
            },
            None => POLL,
        };
        listener.poll(wait, &mut |ev| printer.event(ev))?;
        if let Some(e) = printer.failed.take() {
            // A closed stdout (`btfkit watch | head`) ends the watch quietly.
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                break;
            }
            return Err(e.into());
        }
    }
    Ok(ExitCode::SUCCESS)
}

struct Printer<W: Write> {
    json: bool,
    tracker: Tracker,
    out: W,
    failed: Option<std::io::Error>,
}

impl<W: Write> Printer<W> {
    fn event(&mut self, ev: PerfResult<Event>) {
        if self.failed.is_some() {
            return;
        }
        if let Err(e) = self.print(ev) {
            self.failed = Some(e);
        }
    }

    fn print(&mut self, ev: PerfResult<Event>) -> std::io::Result<()> {
        let ev = match ev {
            Ok(ev) => ev,
            Err(e) => {
                eprintln!("btfkit: warning: record skipped: {e}");
                return Ok(());
            }
        };
        let warnings_before = self.tracker.table.warnings().len();
        self.tracker.apply(&ev);
        match &ev.record {
            Record::Ksymbol(k) => {
                let what = if k.is_unregister() {
                    "unregister"
                } else {
                    "register"
                };
                if self.json {
                    let mut v = context(&ev, what);
                    extend(
                        &mut v,
                        json!({
                            "name": k.name,
                            "addr": format!("{:#x}", k.addr),
                            "len": k.len,
                            "type": ksym_type::name(k.ksym_type),
                        }),
                    );
                    self.line(&v)?;
                } else {
                    writeln!(
                        self.out,
                        "{} {:<10} {:016x} {:>6} {:<7} {}",
                        prefix(&ev),
                        what,
                        k.addr,
                        k.len,
                        ksym_type::name(k.ksym_type),
                        k.name
                    )?;
                }
            }
            Record::BpfEvent(b) => {
                let what = match b.kind {
                    BpfEvent::PROG_LOAD => "bpf_prog_load",
                    BpfEvent::PROG_UNLOAD => "bpf_prog_unload",
                    _ => "bpf_event",
                };
                if self.json {
                    let mut v = context(&ev, what);
                    extend(
                        &mut v,
                        json!({"id": b.id, "tag": tag_text(&b.tag), "bpf_event_type": b.kind}),
                    );
                    self.line(&v)?;
                } else {
                    writeln!(
                        self.out,
                        "{} {:<10} id {} tag {}",
                        prefix(&ev),
                        what,
                        b.id,
                        tag_text(&b.tag)
                    )?;
                }
            }
            Record::Lost { lost, .. } => {
                if self.json {
                    let mut v = context(&ev, "lost");
                    extend(&mut v, json!({"lost": lost}));
                    self.line(&v)?;
                } else {
                    writeln!(
                        self.out,
                        "{} lost {} (ring buffer full)",
                        prefix(&ev),
                        super::count::count(*lost as usize, "record")
                    )?;
                }
            }
            _ => {}
        }
        self.print_warnings(&ev, warnings_before)
    }

    /// The tracker's warnings past the first `before`: those `ev` gave.
    fn print_warnings(&mut self, ev: &Event, before: usize) -> std::io::Result<()> {
        let new: Vec<String> = self
            .tracker
            .table
            .warnings()
            .get(before..)
            .unwrap_or_default()
            .iter()
            .map(|w| w.to_string())
            .collect();
        for message in new {
            if self.json {
                let mut v = context(ev, "warning");
                extend(&mut v, json!({"message": message}));
                self.line(&v)?;
            } else {
                writeln!(self.out, "{} warning: {message}", prefix(ev))?;
            }
        }
        Ok(())
    }

    fn line(&mut self, v: &Value) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, v)?;
        writeln!(self.out)
    }
}

/// The process that caused an event, if it is still there to ask.
fn comm(pid: Option<u32>) -> Option<String> {
    let pid = pid.filter(|&p| p != 0 && p != u32::MAX)?;
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_owned())
}

fn context(ev: &Event, what: &str) -> Value {
    json!({
        "event": what,
        "time": ev.id.time,
        "cpu": ev.id.cpu,
        "pid": ev.id.pid,
        "tid": ev.id.tid,
        "comm": comm(ev.id.pid),
    })
}

fn extend(v: &mut Value, more: Value) {
    if let (Some(obj), Value::Object(more)) = (v.as_object_mut(), more) {
        obj.extend(more);
    }
}

fn prefix(ev: &Event) -> String {
    let time = ev.id.time.map_or_else(|| "-".to_owned(), format_time);
    let cpu = ev.id.cpu.map_or_else(|| "-".to_owned(), |c| c.to_string());
    let who = match (ev.id.pid, comm(ev.id.pid)) {
        (Some(pid), Some(c)) => format!("{c}/{pid}"),
        (Some(pid), None) => pid.to_string(),
        _ => "-".to_owned(),
    };
    format!("{time} cpu {cpu:<3} {who:<20}")
}
