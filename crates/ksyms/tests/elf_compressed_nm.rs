//! Modules compressed whole, as distributions ship them (`.ko.xz` on
//! Debian sid, `.ko.zst`, `.ko.gz`), read for their symbols. Debian's 6.1
//! modules are compressed at test time with xz, zstd and gzip; the oracles
//! are the uncompressed file read by the same reader and binutils' `nm -f
//! sysv` of it (each symbol's name, value, section and size).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use testkit::compressed::{compress, CODECS};

use ksyms::{SizeSource, Table};

const MODULES: [&str; 3] = [
    "fs/configfs/configfs.ko",
    "fs/fat/fat.ko",
    "fs/isofs/isofs.ko",
];

/// Per (name, section, offset): the ELF sizes of the symbols there.
type Placed = BTreeMap<(String, String, u64), Vec<Option<u64>>>;

/// Every symbol of `table` by name and place (section and offset), with
/// its ELF size when the symbol table states one.
fn placed(table: &Table) -> Placed {
    let mut out = Placed::new();
    for s in table.iter() {
        let text = table.address_text(s.addr);
        let (section, offset) = text.split_once('+').unwrap_or((".text", &text));
        let offset = u64::from_str_radix(offset.trim_start_matches("0x"), 16).expect("hex");
        let size = (s.size_source == SizeSource::Exact)
            .then_some(s.size)
            .flatten();
        out.entry((s.name.to_owned(), section.to_owned(), offset))
            .or_default()
            .push(size);
    }
    for sizes in out.values_mut() {
        sizes.sort();
    }
    out
}

/// The same from `nm -f sysv`: `Name|Value|Class|Type|Size|Line|Section`.
/// A FUNC or OBJECT states its size (nm leaves the column empty for 0).
fn nm_placed(nm: &Path, ko: &Path) -> Placed {
    let text = testkit::run_ok(Command::new(nm).args(["-f", "sysv"]).arg(ko));
    let mut out = Placed::new();
    for line in String::from_utf8(text).expect("UTF-8").lines() {
        let f: Vec<&str> = line.split('|').map(str::trim).collect();
        if f.len() != 7 {
            continue;
        }
        let Ok(value) = u64::from_str_radix(f[1], 16) else {
            continue; // the header line
        };
        let size = match f[3] {
            "FUNC" | "OBJECT" | "TLS" => {
                Some(u64::from_str_radix(f[4], 16).unwrap_or(0)).filter(|&s| s > 0)
            }
            _ => None,
        };
        out.entry((f[0].to_owned(), f[6].to_owned(), value))
            .or_default()
            .push(size);
    }
    for sizes in out.values_mut() {
        sizes.sort();
    }
    out
}

/// Each module's symbols read from its `.ko.xz`, `.ko.zst` and `.ko.gz`
/// are the uncompressed file's, in the same order with the same sizes,
/// letters and places, and those places are nm's.
#[test]
fn compressed_debian_modules_give_the_symbols_nm_gives_uncompressed_xz_zstd_gzip() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let Some(nm) = testkit::tool_or_skip("nm", "binutils") else {
        return;
    };
    let fx = testkit::Fixture::new();
    let dir = fx.dir.path();
    let mut checked = 0;
    for rel in MODULES {
        let ko = k.image_modules.join("kernel").join(rel);
        if !ko.is_file() {
            return testkit::skip(&format!(
                "{} is not cached: run scripts/fetch-debian-kernel.sh",
                ko.display()
            ));
        }
        let plain = Table::new(ksyms::elf::read(&ko).expect("uncompressed module"));
        let expected = placed(&plain);
        assert_eq!(expected, nm_placed(&nm, &ko), "{rel}: ksyms against nm");
        for (tool, package, ext) in CODECS {
            let Some(tool) = testkit::tool_or_skip(tool, package) else {
                return;
            };
            let file = compress(&tool, &ko, dir, ext);
            let table = Table::new(ksyms::elf::read(&file).expect("compressed module"));
            assert_eq!(table.source(), file, "{rel}.{ext}");
            assert_eq!(table.len(), plain.len(), "{rel}.{ext}");
            for (a, b) in table.iter().zip(plain.iter()) {
                assert_eq!(
                    (a.addr, a.size, a.size_source, a.name, a.type_char),
                    (b.addr, b.size, b.size_source, b.name, b.type_char),
                    "{rel}.{ext}"
                );
            }
            assert_eq!(placed(&table), expected, "{rel}.{ext}");
            checked += 1;
        }
    }
    assert_eq!(checked, MODULES.len() * CODECS.len());
}

/// A compressed file cut in half, or whose stream is not one, is an error
/// naming the file and the codec that failed, never symbols.
#[test]
fn a_truncated_or_corrupt_compressed_module_names_the_file_and_codec() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let ko = k.image_modules.join("kernel").join(MODULES[0]);
    if !ko.is_file() {
        return testkit::skip(&format!(
            "{} is not cached: run scripts/fetch-debian-kernel.sh",
            ko.display()
        ));
    }
    let fx = testkit::Fixture::new();
    let dir = fx.dir.path();
    for (codec, package, ext) in CODECS {
        let Some(tool) = testkit::tool_or_skip(codec, package) else {
            return;
        };
        let whole = std::fs::read(compress(&tool, &ko, dir, ext)).expect("read");
        let half = dir.join(format!("half.ko.{ext}"));
        std::fs::write(&half, &whole[..whole.len() / 2]).expect("write");
        // The magic bytes, then garbage.
        let mut garbage = whole[..6].to_vec();
        garbage.extend(std::iter::repeat_n(0x55, 4096));
        let bad = dir.join(format!("bad.ko.{ext}"));
        std::fs::write(&bad, &garbage).expect("write");
        for file in [&half, &bad] {
            let err = ksyms::elf::read(file)
                .expect_err("a broken stream must not read")
                .to_string();
            let expected = format!("{}: {codec}-compressed file: ", file.display());
            assert!(err.starts_with(&expected), "{err}");
        }
    }
}
