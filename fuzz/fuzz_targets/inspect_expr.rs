//! Arbitrary text as an inspect expression: the lexer and parser must give
//! an expression or an error with a column, never panic (or recurse
//! without bound on nested parentheses).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let is_type = |n: &str| matches!(n, "u64" | "pid_t" | "size_t");
    if let Ok(p) = inspect::parse::Parser::new(src, &is_type) {
        let _ = p.parse();
    }
});
