//! `btfkit list [--json]`: the BTF objects loaded in the kernel and the
//! programs and maps that use them, as `bpftool btf list` prints them.

use std::io::Write;
use std::process::ExitCode;

use btf::loaded::LoadedBtf;
use serde::Serialize;

#[derive(clap::Args)]
pub struct ListArgs {
    /// One JSON object per BTF object, as `bpftool -j btf list`
    #[arg(long)]
    json: bool,
}

/// bpftool's JSON keys, in its order; `name` only when there is one.
#[derive(Serialize)]
struct Json<'a> {
    id: u32,
    size: u32,
    prog_ids: &'a [u32],
    map_ids: &'a [u32],
    kernel: bool,
    #[serde(skip_serializing_if = "str::is_empty")]
    name: &'a str,
}

/// bpftool's line: `ID: name [MODULE]  size NB  prog_ids A,B  map_ids C`.
fn line(out: &mut impl Write, b: &LoadedBtf) -> std::io::Result<()> {
    write!(out, "{}: ", b.id)?;
    if b.kernel {
        write!(out, "name [{}]  ", b.name)?;
    } else if !b.name.is_empty() {
        write!(out, "name {}  ", b.name)?;
    } else {
        write!(out, "name <anon>  ")?;
    }
    write!(out, "size {}B", b.size)?;
    for (label, ids) in [("prog_ids", &b.prog_ids), ("map_ids", &b.map_ids)] {
        if !ids.is_empty() {
            let ids: Vec<String> = ids.iter().map(u32::to_string).collect();
            write!(out, "  {label} {}", ids.join(","))?;
        }
    }
    writeln!(out)
}

pub fn run(args: ListArgs) -> anyhow::Result<ExitCode> {
    let objects = btf::loaded::list()?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        let rows: Vec<Json<'_>> = objects
            .iter()
            .map(|b| Json {
                id: b.id,
                size: b.size,
                prog_ids: &b.prog_ids,
                map_ids: &b.map_ids,
                kernel: b.kernel,
                name: &b.name,
            })
            .collect();
        serde_json::to_writer(&mut out, &rows)?;
        writeln!(out)?;
    } else {
        for b in &objects {
            line(&mut out, b)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
