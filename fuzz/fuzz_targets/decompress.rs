//! fileio's compressed-input path on arbitrary bytes: whole-file
//! decompression (xz, zstd, gzip; every stream and frame) under the cap
//! and the magic and ELF-end rules, as a mapped file and as a pipe.
//! Nothing may panic or allocate past the cap; bad input is an error.
//!
//! The first byte picks what the rest is: 0-2, content that is compressed
//! here (xz, zstd, gzip) so that valid streams of any content reach the
//! rules; otherwise, the compressed bytes themselves (corrupt, cut,
//! concatenated streams), as a file or a stream. Its low bits also pick
//! the formats the reader takes.

#![no_main]

use std::io::Write;

use fileio::compressed_file::decompress_capped;
use fileio::format::{Format, ELF_OR_BTF};
use libfuzzer_sys::fuzz_target;

/// Small enough for libFuzzer's memory limit, large enough for the rules.
const CAP: u64 = 16 << 20;

fn compressed(mode: u8, content: &[u8]) -> Vec<u8> {
    match mode {
        0 => {
            let mut e = liblzma::write::XzEncoder::new(Vec::new(), 0);
            let _ = e.write_all(content);
            e.finish().unwrap_or_default()
        }
        1 => zstd::encode_all(content, 1).unwrap_or_default(),
        _ => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let _ = e.write_all(content);
            e.finish().unwrap_or_default()
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let accept: &[Format] = match first >> 6 {
        0 => ELF_OR_BTF,
        1 => &[Format::PerfData],
        2 => &[Format::Elf],
        _ => &[],
    };
    let mode = first & 0x3f;
    let file = if mode < 3 {
        compressed(mode, rest)
    } else {
        rest.to_vec()
    };
    match decompress_capped(&file, accept, CAP) {
        Some(Ok(out)) => {
            assert!(out.len() as u64 <= CAP);
            if mode < 3 {
                // A valid stream decodes to what was compressed, or is refused.
                assert_eq!(out, rest);
            }
        }
        Some(Err(e)) => {
            let _ = e.to_string();
        }
        None => {}
    }
    let path = std::path::Path::new("-");
    match fileio::input_file::read_stream(path, "a pipe", &file[..], accept, CAP) {
        Ok(out) => assert!(out.len() as u64 <= CAP),
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
