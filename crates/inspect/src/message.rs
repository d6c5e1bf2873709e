//! Error messages that stay short however long the input: a message names
//! what the user wrote ([`quoted`]) and shows where in a line it went
//! wrong ([`Excerpt`]) without repeating megabytes of it, as a compiler
//! shows a window of the line with a caret under the column.

/// Longest text (a name, a token) a message repeats whole.
const QUOTED: usize = 64;

/// Lines up to this many bytes are shown whole.
pub const WHOLE_LINE: usize = 100;

/// Bytes of a long line shown on each side of the error's column.
const CONTEXT: usize = 20;

/// `text` quoted as `{:?}` quotes it; longer than 64 bytes, its start and
/// end with `…` between and its length: `"aaaa…aaaa" (10000000 bytes)`.
pub fn quoted(text: &str) -> String {
    if text.len() <= QUOTED {
        return format!("{text:?}");
    }
    let head = &text[..floor_boundary(text, 40)];
    let tail = &text[ceil_boundary(text, text.len() - 16)..];
    format!(
        "\"{}…{}\" ({} bytes)",
        head.escape_debug(),
        tail.escape_debug(),
        text.len()
    )
}

/// The part of a line an error shows: the whole line when short; else
/// about 40 characters around the error's column, `…` where cut, and
/// where the column is in the excerpt (for a caret under it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Excerpt {
    /// The line, or the window of it shown.
    pub text: String,
    /// The column's character in `text`, counted from 0, when the line was
    /// cut and the error has a column.
    pub caret: Option<usize>,
}

impl Excerpt {
    /// The excerpt of `line` for an error at byte column `col` (counted
    /// from 1; `None`: the error has no column, and the line's start is
    /// shown).
    pub fn new(line: &str, col: Option<usize>) -> Excerpt {
        if line.len() <= WHOLE_LINE {
            return Excerpt {
                text: line.to_owned(),
                caret: None,
            };
        }
        let at = floor_boundary(line, col.map_or(0, |c| c.saturating_sub(1)));
        // 2 * CONTEXT bytes, the column in the middle unless near an end.
        let from = at.saturating_sub(CONTEXT).min(line.len() - 2 * CONTEXT);
        let start = floor_boundary(line, from);
        let end = ceil_boundary(line, from + 2 * CONTEXT);
        // Control characters (a tab) would move the caret: shown as spaces.
        let shown = |s: &str| -> String {
            s.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect()
        };
        let mut text = String::new();
        if start > 0 {
            text.push('…');
        }
        let caret = text.chars().count() + line[start..at].chars().count();
        text.push_str(&shown(&line[start..end]));
        if end < line.len() {
            text.push('…');
        }
        Excerpt {
            text,
            caret: col.map(|_| caret),
        }
    }

    /// The caret line under the excerpt when it follows `indent` characters
    /// on its line (`btfkit: `).
    pub fn caret_line(&self, indent: usize) -> Option<String> {
        self.caret.map(|c| format!("{}^", " ".repeat(indent + c)))
    }
}

/// The largest char boundary of `s` at or below `i`.
fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary of `s` at or above `i`.
fn ceil_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_whole_and_long_text_is_cut() {
        assert_eq!(quoted("init_task"), "\"init_task\"");
        let long = "a".repeat(10_000_000);
        let q = quoted(&long);
        assert!(q.len() < 100, "{q}");
        assert!(q.ends_with("(10000000 bytes)"), "{q}");
        // Cut on a character, not inside one.
        let wide = "é".repeat(100);
        assert!(quoted(&wide).contains("éé…éé"));

        let line = "per_cpu(runqueues, 1).nr_running +";
        assert_eq!(
            Excerpt::new(line, Some(35)),
            Excerpt {
                text: line.into(),
                caret: None
            }
        );
        let mut long = "1+".repeat(5_000_000);
        long.push('$');
        long.push_str(&"+1".repeat(5_000_000));
        let col = 10_000_001;
        let e = Excerpt::new(&long, Some(col));
        assert!(e.text.chars().count() <= 2 * CONTEXT + 3, "{}", e.text);
        assert!(
            e.text.starts_with('…') && e.text.ends_with('…'),
            "{}",
            e.text
        );
        let caret = e.caret.expect("a caret");
        assert_eq!(e.text.chars().nth(caret), Some('$'), "{e:?}");
        assert_eq!(e.caret_line(8).expect("caret").len(), 8 + caret + 1);

        // At the start and at the end: the window keeps its width.
        let e = Excerpt::new(&long, Some(1));
        assert_eq!((e.text.chars().next(), e.caret), (Some('1'), Some(0)));
        assert!(e.text.chars().count() >= 2 * CONTEXT);
        let e = Excerpt::new(&long, Some(long.len() + 1));
        assert!(
            !e.text.ends_with('…') && e.text.starts_with('…'),
            "{}",
            e.text
        );
        assert_eq!(e.caret, Some(e.text.chars().count()));
        // No column: the start of the line.
        let e = Excerpt::new(&long, None);
        assert_eq!(e.caret, None);
        assert!(e.text.starts_with("1+1+") && e.text.ends_with('…'));
        // Multi-byte characters around the column.
        let wide = format!("{}${}", "é".repeat(100), "ü".repeat(100));
        let e = Excerpt::new(&wide, Some(201));
        assert_eq!(e.text.chars().nth(e.caret.expect("caret")), Some('$'));
    }
}
