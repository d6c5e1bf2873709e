//! Shared by the tests on the QEMU dumps: lines run through the library as
//! `btfkit inspect` runs them (crates/btfkit/src/cmd/inspect.rs), and BTF
//! encoded as `btfkit encode` encodes it, so that the tests compare the
//! library's output with what the command prints.

#![allow(dead_code)]
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use dwarf2btf::encode::NoProgress;
use dwarf2btf::options::{AddrTags, EncodeOptions, FuncMode, VarsMode};
use inspect::commands;
use inspect::open::Options;

/// What `btfkit inspect` prints for some lines, stdout not a terminal.
pub struct Printed {
    pub stdout: String,
    pub stderr: String,
    /// No line failed (the command's exit status 0).
    pub ok: bool,
}

/// A dump with a BTF file (`btfkit inspect DUMP [--btf BTF]`).
pub fn opts(dump: &Path, btf: Option<&Path>) -> Options {
    Options {
        vmcore: Some(dump.to_owned()),
        btf: btf.map(Path::to_owned),
        ..Options::default()
    }
}

/// `btfkit inspect` with `opts` and `lines` (`--json` if `json`): each
/// reply's text on a line of stdout, or one JSON object per line
/// (`{"expr"|"command": LINE, "value"|"error": ...}`); errors on stderr
/// as `btfkit: LINE: ERROR`. Panics if the dump does not open.
pub fn inspect<S: AsRef<str>>(opts: &Options, lines: &[S], json: bool) -> Printed {
    let mut prog = inspect::open::open(opts).unwrap();
    let (mut stdout, mut stderr, mut ok) = (String::new(), String::new(), true);
    for line in lines
        .iter()
        .map(AsRef::as_ref)
        .take_while(|l| !commands::is_quit(l))
    {
        let r = commands::run_line(&mut prog, line);
        let key = if commands::find(line).is_some() {
            "command"
        } else {
            "expr"
        };
        match (&r, json) {
            (Ok(reply), true) => {
                let j = serde_json::json!({ key: line, "value": reply.json });
                stdout.push_str(&format!("{j}\n"));
            }
            (Ok(reply), false) => stdout.push_str(&format!("{}\n", reply.text)),
            (Err(e), true) => {
                let j = serde_json::json!({ key: line, "error": e.to_string() });
                stdout.push_str(&format!("{j}\n"));
            }
            (Err(e), false) => stderr.push_str(&format!("btfkit: {line}: {e}\n")),
        }
        ok &= r.is_ok();
    }
    Printed { stdout, stderr, ok }
}

/// [`inspect`]'s stdout; panics with its stderr if a line failed.
pub fn run_ok<S: AsRef<str>>(opts: &Options, lines: &[S], json: bool) -> String {
    let out = inspect(opts, lines, json);
    assert!(out.ok, "{}", out.stderr);
    out.stdout
}

/// `btfkit encode ELF [--vars all] [--base BASE] -o OUT`: the encoder
/// with the command line's defaults.
pub fn encode(elf: &Path, base: Option<&Path>, vars_all: bool, out: &Path) {
    let opts = EncodeOptions {
        jobs: 0,
        funcs: FuncMode::Exact,
        vars: if vars_all {
            VarsMode::All
        } else {
            VarsMode::Percpu
        },
        addr_tags: AddrTags::Ambiguous,
        keep_rust: false,
        no_dedup: false,
        layout: false,
        attributes: false,
        dwz_alt: None,
    };
    let base = base.map(|b| Arc::new(btf::load_file(b, None).unwrap()));
    let elf = dwarf2btf::load::ElfFile::open(elf).unwrap();
    let encoded = dwarf2btf::encode(&elf, base, &opts, &NoProgress).unwrap();
    std::fs::write(out, encoded.btf.to_bytes()).unwrap();
}
