//! The files btfkit reads and writes, apart from what is in them.
//!
//! An input is mapped where it can be (a debug vmlinux is ~600 MB and a
//! reader touches a few of its sections), read as a stream where it cannot
//! (pipes, FIFOs, devices, sysfs), and decompressed when it is compressed
//! whole (`.ko.xz`, `.ko.zst`, `.ko.gz`): [`input_file`],
//! [`compressed_file`]. What is read as a stream or decompressed must start
//! with the magic of a format the reader takes ([`format`](mod@format)), is
//! capped at [`MAX_SIZE`], and may not run far past the end its headers
//! give ([`bounded`]). An ELF section's bytes are decompressed when the
//! section is ([`elf_section`]). An output replaces what is at its path
//! whole or not at all ([`output_file`]).
//!
//! The BTF reader (`btf`), the symbol readers (`ksyms`) and the encoder
//! (`dwarf2btf`) share these, so that every command treats a file alike.

#![warn(missing_docs)]

pub mod bounded;
pub mod compressed_file;
pub mod elf_section;
mod error;
pub mod format;
pub mod input_file;
pub mod output_file;
mod sigbus;

pub use bounded::{StreamError, MAX_SIZE};
pub use error::{DecompressError, Error};
pub use format::Format;
pub use input_file::InputFile;

/// The program's name in messages: `argv[0]`'s file name (`btfkit`, or
/// `pahole` when run under that name).
pub(crate) fn program_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "btfkit".to_owned())
}
