//! Long replies through a pager, as crash pages its output: only when
//! stdout is a terminal and the text is longer than the terminal is high;
//! `$PAGER` (run by the shell, so it may carry options), else `less`. A
//! pager that cannot start leaves the text printed as it is.

use std::io::{IsTerminal, Write};
use std::process::{Command, Stdio};

/// The terminal's height in rows, when stdout is a terminal.
fn terminal_rows() -> Option<usize> {
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into the struct we pass.
    let r = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
    (r == 0 && size.ws_row > 0).then_some(usize::from(size.ws_row))
}

/// Prints `text` and a newline: through the pager when it would scroll
/// off a terminal.
pub fn print(text: &str) -> std::io::Result<()> {
    let long = terminal_rows().is_some_and(|rows| text.lines().count() >= rows);
    if long && page(text).is_ok() {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()
}

fn page(text: &str) -> std::io::Result<()> {
    let pager = std::env::var("PAGER")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "less".to_owned());
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(&pager).stdin(Stdio::piped());
    // less: leave the text on the screen and quit at its end, as git does.
    if std::env::var_os("LESS").is_none() {
        cmd.env("LESS", "FRX");
    }
    let mut child = cmd.spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        // A pager quit early (q) closes the pipe: not an error.
        let _ = writeln!(stdin, "{text}");
    }
    // 127: the shell found no such pager; the caller prints instead.
    if child.wait()?.code() == Some(127) {
        return Err(std::io::Error::other(format!("{pager}: not found")));
    }
    Ok(())
}
