//! The one error of inspect: an expression's (where in it, from column 1,
//! and what went wrong there), opening a kernel's (a file, its memory, its
//! BTF or its symbols), or a kernel structure's that a command reads.
//!
//! A cause from another crate is kept as its own type. Each message says
//! its cause's message once: a variant that adds words to its cause shows
//! it in its text and does not chain it as `source()`, so anyhow's `{:#}`
//! (which prints every source after the error) does not say it twice; a
//! variant that adds nothing is `transparent`.

use std::path::PathBuf;

/// Why an expression, a command or opening a kernel failed. The first
/// four variants carry the column of the input they are about.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The expression does not parse there.
    #[error("column {col}: {msg}")]
    Syntax {
        /// The column, counted from one (a byte offset into the line).
        col: usize,
        /// What is wrong there.
        msg: String,
    },
    /// The expression parses but cannot be evaluated there.
    #[error("column {col}: {msg}")]
    Eval {
        /// The column, counted from one (a byte offset into the line).
        col: usize,
        /// Why it cannot be evaluated.
        msg: String,
    },
    /// Memory the expression reads there does not read.
    #[error("column {col}: {error}")]
    Memory {
        /// The column, counted from one (a byte offset into the line).
        col: usize,
        /// What reading the memory said.
        error: kmem::Error,
    },
    /// A command's argument at a column fails for a reason of its own (a
    /// kernel structure the command needs does not read).
    #[error("column {col}: {error}")]
    At {
        /// The column, counted from one (a byte offset into the line).
        col: usize,
        /// The reason.
        error: Box<Error>,
    },
    /// A line that reads as a command this program does not have.
    #[error("unknown command {}: `help` lists the commands", crate::message::quoted(.0))]
    UnknownCommand(String),
    /// A command's arguments are wrong: its usage.
    #[error("usage: {0}")]
    Usage(String),

    /// BTF that does not load.
    #[error(transparent)]
    Btf(#[from] btf::Error),
    /// Kernel memory (the live kernel, or the kernel's tables in a dump)
    /// that does not read.
    #[error(transparent)]
    Kmem(#[from] kmem::Error),
    /// Symbols (kallsyms text, a System.map) that do not parse.
    #[error(transparent)]
    Ksyms(#[from] ksyms::Error),
    /// A file given that does not read.
    #[error("{}: {error}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// A file given as a dump that is no regular file: `kind` says what it is.
    #[error("{}: {kind}, not a crash dump (the live kernel is read without one)", path.display())]
    NotAFile {
        /// The file.
        path: PathBuf,
        /// What it is instead: "a directory", "a character device"...
        kind: &'static str,
    },
    /// A file given as a dump that is in no dump format.
    #[error("{}: cannot be read as a crash dump: {}", path.display(), dump_reason(path, error))]
    NotADump {
        /// The file.
        path: PathBuf,
        /// Why kmem does not read it as a dump.
        error: kmem::Error,
    },
    /// The kernel's own tables (kallsyms, BTF) in a dump's memory, or
    /// /proc/kcore's, that do not read: a truncated dump, say.
    #[error("{}: {error}", path.display())]
    InDump {
        /// The dump (or /proc/kcore).
        path: PathBuf,
        /// What reading them said.
        error: kmem::Error,
    },
    /// A symbol that finding the kernel's BTF in memory needs.
    #[error("no {0} symbol: give --btf")]
    NoBtfSymbol(&'static str),
    /// A BTF file given that describes another kernel than the one read
    /// (another release, build or architecture): the kernel (a dump's
    /// path, or the running kernel), its release and what differs.
    #[error("{}: BTF of another kernel than {kernel} ({release}): {differences}", btf.display())]
    OtherKernelBtf {
        /// The BTF file given.
        btf: PathBuf,
        /// The kernel read: a dump's path, or "the running kernel".
        kernel: String,
        /// Its release (VMCOREINFO's OSRELEASE).
        release: String,
        /// The first differences found, and how many more there are.
        differences: String,
    },
    /// A module's BTF file given for a module the kernel has not loaded.
    #[error("{}: no module {module} is loaded", path.display())]
    NoModule {
        /// The module's BTF file.
        path: PathBuf,
        /// The module's name, as given.
        module: String,
    },
    /// A module's BTF file that is no split BTF over the program's BTF.
    #[error("{}: {error}", path.display())]
    ModuleBtf {
        /// The module's BTF file.
        path: PathBuf,
        /// What the BTF reader said.
        error: btf::Error,
    },
    /// The terminal of the prompt. (rustyline's error chains the I/O
    /// error it shows, so it is not chained again.)
    #[error("{0}")]
    Readline(rustyline::error::ReadlineError),
    /// Standard output that cannot be written.
    #[error("stdout: {0}")]
    Stdout(std::io::Error),

    /// A type a kernel structure needs that the BTF lacks.
    #[error("no {0} in the BTF")]
    NoType(String),
    /// A member a kernel structure needs that the BTF's type lacks.
    #[error("{ty} has no member {member} in the BTF")]
    NoMember {
        /// The type, as C spells it (`struct module`).
        ty: String,
        /// The member path it lacks.
        member: String,
    },
    /// A member the task readers need that the BTF's `ty` lacks.
    #[error("the BTF has no {ty} member {member}")]
    NoTaskMember {
        /// The type, as C spells it (`struct signal_struct`).
        ty: &'static str,
        /// The member it lacks.
        member: String,
    },
    /// A symbol a kernel structure starts at.
    #[error("no symbol {0}")]
    NoSymbol(String),
    /// A symbol the task readers need.
    #[error("no {0} symbol")]
    NoTaskSymbol(&'static str),
    /// Neither symbol that says which task a CPU runs.
    #[error("neither current_task nor pcpu_hot is a symbol")]
    NoCurrentTask,
    /// A variable the task readers need that does not read.
    #[error("{0} unreadable")]
    Unreadable(&'static str),
    /// A kernel structure (`what`) whose memory does not read.
    #[error("{what} at {addr:#x}: {error}")]
    Read {
        /// What was being read, in words (`struct module`, `printk_ringbuffer`).
        what: String,
        /// Its kernel virtual address.
        addr: u64,
        /// What reading the memory said.
        error: kmem::Error,
    },
    /// A word of a task (or of what it points to) that does not read.
    #[error("reading {addr:#x}: {error}")]
    Reading {
        /// The kernel virtual address of the word.
        addr: u64,
        /// What reading the memory said.
        error: kmem::Error,
    },
    /// A task's name that does not read.
    #[error("task {addr:#x}: {error}")]
    TaskName {
        /// The `task_struct`'s kernel virtual address.
        addr: u64,
        /// What reading the memory said.
        error: kmem::Error,
    },
    /// The thread list of the process led by `leader` that does not read.
    #[error("threads of {leader:#x}: {error}")]
    Threads {
        /// The thread group leader's `task_struct` address.
        leader: u64,
        /// Why the list does not read.
        error: Box<Error>,
    },
    /// The thread list of the process led by `leader` that loops.
    #[error("thread list of {leader:#x} loops at {node:#x}")]
    ThreadsLoop {
        /// The thread group leader's `task_struct` address.
        leader: u64,
        /// The list node met a second time (or the first past
        /// [`MAX_TASKS`](crate::kernel::task::MAX_TASKS) tasks).
        node: u64,
    },
    /// A kernel structure whose contents make no sense.
    #[error("{0}")]
    Corrupt(String),
}

/// Why a file is no dump: kmem's error without the file name, which the
/// message has already said.
fn dump_reason(path: &std::path::Path, error: &kmem::Error) -> String {
    let text = error.to_string();
    let prefix = format!("{}: ", path.display());
    match text.strip_prefix(&prefix) {
        Some(rest) => rest.to_owned(),
        None => text,
    }
}

impl Error {
    /// A [`Error::Syntax`] at column `col`.
    pub fn syntax(col: usize, msg: impl Into<String>) -> Error {
        Error::Syntax {
            col,
            msg: msg.into(),
        }
    }
    /// An [`Error::Eval`] at column `col`.
    pub fn eval(col: usize, msg: impl Into<String>) -> Error {
        Error::Eval {
            col,
            msg: msg.into(),
        }
    }
    /// An error of a command's argument at `col`.
    pub fn at(col: usize, error: Error) -> Error {
        Error::At {
            col,
            error: Box::new(error),
        }
    }
    /// The column of the line the error is at, counted from 1 in bytes;
    /// `None` for an error of no place in it.
    pub fn column(&self) -> Option<usize> {
        match self {
            Error::Syntax { col, .. }
            | Error::Eval { col, .. }
            | Error::Memory { col, .. }
            | Error::At { col, .. } => Some(*col),
            _ => None,
        }
    }

    /// The same error with its column counted `by` bytes further right:
    /// for an expression that is part of a longer line. Errors without a
    /// column stay as they are.
    pub fn shifted(self, by: usize) -> Error {
        match self {
            Error::Syntax { col, msg } => Error::Syntax { col: col + by, msg },
            Error::Eval { col, msg } => Error::Eval { col: col + by, msg },
            Error::Memory { col, error } => Error::Memory {
                col: col + by,
                error,
            },
            Error::At { col, error } => Error::At {
                col: col + by,
                error,
            },
            e => e,
        }
    }
}

/// A result whose error is inspect's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
