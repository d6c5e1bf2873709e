//! Errors of expressions: where in the expression (column, from 1), and
//! what went wrong there.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("column {col}: {msg}")]
    Syntax { col: usize, msg: String },
    #[error("column {col}: {msg}")]
    Eval { col: usize, msg: String },
    #[error("column {col}: {error}")]
    Memory { col: usize, error: kmem::Error },
    #[error("{0}")]
    Setup(String),
    /// A line that reads as a command this program does not have.
    #[error("unknown command {0:?}: `help` lists the commands")]
    UnknownCommand(String),
    /// A command's arguments are wrong: its usage.
    #[error("usage: {0}")]
    Usage(String),
    /// A kernel structure a command reads (modules, the log) does not read.
    #[error(transparent)]
    Kernel(#[from] crate::kernel::layout::KernelError),
}

impl Error {
    pub fn syntax(col: usize, msg: impl Into<String>) -> Error {
        Error::Syntax {
            col,
            msg: msg.into(),
        }
    }
    pub fn eval(col: usize, msg: impl Into<String>) -> Error {
        Error::Eval {
            col,
            msg: msg.into(),
        }
    }
    /// The same error with its column counted `by` bytes further right:
    /// for an expression that is part of a longer line.
    pub fn shifted(self, by: usize) -> Error {
        match self {
            Error::Syntax { col, msg } => Error::Syntax { col: col + by, msg },
            Error::Eval { col, msg } => Error::Eval { col: col + by, msg },
            Error::Memory { col, error } => Error::Memory {
                col: col + by,
                error,
            },
            e @ (Error::Setup(_)
            | Error::Usage(_)
            | Error::UnknownCommand(_)
            | Error::Kernel(_)) => e,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
