//! One module per subcommand; each owns its clap arguments and its `run`.

pub mod check;
pub mod dedup;
pub mod diff;
pub mod dump;
pub mod encode;
pub mod funcs;
pub mod inspect;
pub mod layout;
pub mod pahole;
pub mod perf;
pub mod report;
pub mod resolve;
pub mod watch;

/// An error and its causes joined by ": ", as anyhow's `{:#}` prints them,
/// but without a cause whose text its parent's message already ends with:
/// the library errors show their source in their own message (`PATH:
/// Not a directory (os error 20)`), and `{:#}` would say it twice.
pub fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.ends_with(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_already_in_its_parents_message_is_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = anyhow::Error::new(io).context("f.btf: gone");
        assert_eq!(error_text(&e), "f.btf: gone");
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_text(&e), "outer: inner");
    }
}
