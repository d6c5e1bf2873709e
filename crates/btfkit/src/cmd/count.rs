//! Counted nouns in messages: "1 problem", "2 problems".

use std::fmt;

/// `n` and `noun`, in the plural unless `n` is 1. Nouns whose plural is not
/// `noun` + "s" are not counted with it.
pub fn count(n: usize, noun: &str) -> Count<'_> {
    Count { n, noun }
}

pub struct Count<'a> {
    n: usize,
    noun: &'a str,
}

impl fmt::Display for Count<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = if self.n == 1 { "" } else { "s" };
        write!(f, "{} {}{s}", self.n, self.noun)
    }
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn one_is_singular_zero_and_many_are_plural() {
        assert_eq!(count(1, "problem").to_string(), "1 problem");
        assert_eq!(count(0, "problem").to_string(), "0 problems");
        assert_eq!(count(2, "FUNC").to_string(), "2 FUNCs");
    }
}
