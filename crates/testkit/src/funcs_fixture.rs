//! The function fixture program (two units, static functions of one name,
//! clones, one object built twice) and `nm`, shared by the tests of the
//! function model (dwarf2btf), of the encoder's FUNCs and of the fentry
//! audit (fentry).

use std::path::Path;
use std::process::Command;

pub fn build_fixture() -> Option<(crate::Fixture, std::path::PathBuf)> {
    build_fixture_with("-g")
}

/// The fixture program with `debug` as its DWARF option (`-gdwarf-4`: GNU
/// call sites, as GCC before 11 writes them).
pub fn build_fixture_with(debug: &str) -> Option<(crate::Fixture, std::path::PathBuf)> {
    crate::tool_or_skip("gcc", "gcc")?;
    let fx = crate::Fixture::new();
    for (n, src) in [
        ("a.c", include_str!("../fixtures/funcs/a.c")),
        ("b.c", include_str!("../fixtures/funcs/b.c")),
        ("c.c", include_str!("../fixtures/funcs/c.c")),
        ("note.c", include_str!("../fixtures/funcs/note.c")),
    ] {
        fx.write(n, src);
    }
    let cc = |args: &[&str]| {
        crate::run_ok(Command::new("gcc").current_dir(fx.dir.path()).args(args));
    };
    for f in ["a.c", "b.c", "c.c"] {
        cc(&[debug, "-O2", "-c", f]);
    }
    cc(&[debug, "-O2", "-c", "note.c", "-o", "note1.o"]);
    cc(&[debug, "-O2", "-DCOMPAT", "-c", "note.c", "-o", "note2.o"]);
    cc(&["-o", "fx", "a.o", "b.o", "c.o", "note1.o", "note2.o"]);
    let exe = fx.path("fx");
    Some((fx, exe))
}

/// The addresses of `name` in the ELF at `path`, sorted (`nm`).
pub fn nm(path: &Path, name: &str) -> Vec<u64> {
    let out = crate::run_ok(Command::new("nm").arg(path));
    addresses_of(&String::from_utf8_lossy(&out), name)
}

/// The addresses of `name` in `nm` output or a System.map, sorted.
pub fn addresses_of(text: &str, name: &str) -> Vec<u64> {
    let mut v: Vec<u64> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (a, _, n) = (f.next()?, f.next()?, f.next()?);
            (n == name).then(|| u64::from_str_radix(a, 16).ok())?
        })
        .collect();
    v.sort_unstable();
    v
}
