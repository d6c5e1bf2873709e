use std::path::PathBuf;

/// Why a symbol source could not be read. Every variant names the file, and
/// parse errors the line and byte offset, so that a bad line can be found.
/// A cause is part of the message, not also a chained source, so that
/// anyhow's `{:#}` says it once.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened or read.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// A kallsyms or System.map file does not parse: a line is not
    /// `ADDRESS TYPE NAME` with an optional `[MODULE]` (a field is missing,
    /// the address is not hex), or the file is not UTF-8 text or is larger
    /// than 4 GiB.
    #[error("{path}:{line}: {reason} (byte offset {offset})")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line, counted from 1.
        line: usize,
        /// Where in the file the bad field starts, in bytes from its start.
        offset: usize,
        /// What is wrong with the line.
        reason: String,
    },
    /// A kallsyms or System.map file lists no symbol at all (an empty file,
    /// /dev/null): no kernel has such a table, and reading it as one would
    /// answer every lookup with "not found".
    #[error("{path}: lists no symbols (empty)")]
    NoSymbols {
        /// The file.
        path: PathBuf,
    },
    /// Every address of a `/proc/kallsyms` read as zero: the kernel's
    /// `kptr_restrict` policy hides them from this process. Only returned by
    /// readers that need addresses; [`Symbols::addresses_hidden`](crate::Symbols::addresses_hidden)
    /// tells the others.
    #[error(
        "{path}: all {count} addresses read as zero: the kernel hides them from this process. \
         It shows them when kernel.kptr_restrict is 0 and kernel.perf_event_paranoid <= 1 \
         (now {kptr_restrict} and {perf_event_paranoid}), or to a process with CAP_SYSLOG \
         while kptr_restrict <= 1; run as root, or lower these sysctls"
    )]
    AddressesHidden {
        /// The kallsyms file.
        path: PathBuf,
        /// How many symbols it lists.
        count: usize,
        /// `kernel.kptr_restrict` at the time of the error, "?" when unreadable.
        kptr_restrict: String,
        /// `kernel.perf_event_paranoid` at the time of the error, "?" when
        /// unreadable.
        perf_event_paranoid: String,
    },
    /// The file is not ELF, is truncated or malformed, or has no `.symtab`
    /// (a stripped vmlinux).
    #[error("{path}: not an ELF file with a symbol table: {reason}")]
    Elf {
        /// The file.
        path: PathBuf,
        /// What the ELF reader found wrong.
        reason: String,
    },
    /// An ELF file that could not be opened, read or decompressed (a
    /// `.ko.xz`, say).
    #[error(transparent)]
    Input(#[from] fileio::Error),
    /// ELF that the object crate does not read (`section`: where, if in one).
    #[error("{path}: not an ELF file with a symbol table: {}{error}", section.as_deref().map(|s| format!("{s}: ")).unwrap_or_default())]
    Object {
        /// The file.
        path: PathBuf,
        /// The section being read, if the error is in one.
        section: Option<String>,
        /// The object crate's error.
        error: object::read::Error,
    },
    /// [`kaslr_offset`](crate::kaslr_offset) found no symbol it can compare:
    /// `_stext` or `_text` must be in both tables.
    #[error(
        "cannot compute the KASLR offset: neither _stext nor _text is in both {linked} and {live}"
    )]
    NoKaslrAnchor {
        /// The table with link-time addresses (System.map, vmlinux).
        linked: PathBuf,
        /// The table with run-time addresses (`/proc/kallsyms`).
        live: PathBuf,
    },
}

impl Error {
    pub(crate) fn parse(path: &std::path::Path, buf: &[u8], offset: usize, reason: &str) -> Error {
        // Counting lines only here keeps the scanner's hot loop free of it.
        let line = buf
            .get(..offset)
            .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
            + 1;
        Error::Parse {
            path: path.to_owned(),
            line,
            offset,
            reason: reason.to_owned(),
        }
    }

    pub(crate) fn hidden(path: &std::path::Path, count: usize) -> Error {
        let sysctl = |name: &str| {
            std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
                .map(|s| s.trim().to_owned())
                .unwrap_or_else(|_| "?".to_owned())
        };
        Error::AddressesHidden {
            path: path.to_owned(),
            count,
            kptr_restrict: sysctl("kptr_restrict"),
            perf_event_paranoid: sysctl("perf_event_paranoid"),
        }
    }
}
