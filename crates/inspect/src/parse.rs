//! The expression language: C expressions over kernel variables.
//!
//! Precedence climbing over a token list. Every node keeps the column
//! (counted from one) where it starts, so that an error in evaluation can
//! point at it. Casts need a type name: `(` followed by `struct`, `union`,
//! `enum` or a name the caller knows as a type (the `is_type` of
//! [`Parser::new`]) starts a cast.

use crate::error::{Error, Result};
use crate::message::quoted;

/// One token of an expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// A name: a variable, a type word, a member, a helper (`[A-Za-z_]`
    /// then `[A-Za-z0-9_]*`).
    Ident(String),
    /// An integer literal: decimal, `0x` hex or `0` octal, with any `u`/`l`
    /// suffixes dropped.
    Num(u64),
    /// A string literal's text between its double quotes (no escapes).
    Str(String),
    /// An operator or punctuation, the longest that matches (`->` before
    /// `-`).
    Punct(&'static str),
}

const PUNCTS: &[&str] = &[
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "[", "]", ".", ",", "*", "&",
    "+", "-", "/", "%", "<", ">", "^", "|", "~", "!",
];

/// The tokens of `src`, each with the column it starts at (a byte offset
/// counted from one). Errors: a number that does not parse, a string
/// without its closing quote, a character the language does not have.
pub fn lex(src: &str) -> Result<Vec<(Tok, usize)>> {
    let b = src.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        let col = i + 1;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(src[s..i].to_owned()), col));
        } else if c.is_ascii_digit() {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            let text = &src[s..i];
            let digits = text.trim_end_matches(['u', 'U', 'l', 'L']);
            let v = if let Some(h) = digits.strip_prefix("0x").or(digits.strip_prefix("0X")) {
                u64::from_str_radix(h, 16)
            } else if digits.len() > 1 && digits.starts_with('0') {
                u64::from_str_radix(&digits[1..], 8)
            } else {
                digits.parse()
            };
            let v = v.map_err(|_| Error::syntax(col, format!("bad number {}", quoted(text))))?;
            out.push((Tok::Num(v), col));
        } else if c == b'"' {
            let s = i + 1;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += 1;
            }
            if i == b.len() {
                return Err(Error::syntax(col, "unterminated string"));
            }
            out.push((Tok::Str(src[s..i].to_owned()), col));
            i += 1;
        } else if let Some(p) = PUNCTS.iter().find(|p| src[i..].starts_with(**p)) {
            out.push((Tok::Punct(p), col));
            i += p.len();
        } else {
            let ch = src[i..].chars().next().unwrap_or('?');
            return Err(Error::syntax(col, format!("unexpected character {ch:?}")));
        }
    }
    Ok(out)
}

/// A type as written in a cast: a base name and `*`s.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeName {
    /// `struct task_struct`, `unsigned long`, `u64`...
    pub base: String,
    /// How many `*` follow it.
    pub pointers: usize,
    /// The column the type name starts at.
    pub col: usize,
}

/// A parsed expression. The `usize` of each variant (and `col`) is the
/// column, counted from one, that errors about the node point at: where
/// the operand starts for a literal, a name, a unary operator, a cast or
/// `sizeof`; the operator's own column for `.`/`->`, `[` and binary
/// operators.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// An integer literal.
    Num(u64, usize),
    /// A name: a variable, an enumerator or a function, as the evaluator
    /// finds it.
    Name(String, usize),
    /// `base.member`, or `base->member` when `arrow`.
    Member {
        /// The struct or union (or, with `->`, the pointer to it).
        base: Box<Expr>,
        /// The member's name.
        member: String,
        /// Written `->`: `base` is a pointer to dereference first.
        arrow: bool,
        /// The column of the `.` or `->`.
        col: usize,
    },
    /// `array[index]` (or `pointer[index]`).
    Index(Box<Expr>, Box<Expr>, usize),
    /// A prefix operator applied to its operand: `*`, `&`, `-`, `+`, `~`
    /// or `!`.
    Unary(&'static str, Box<Expr>, usize),
    /// A binary operator and its two operands, left then right (C's
    /// precedence and left associativity).
    Binary(&'static str, Box<Expr>, Box<Expr>, usize),
    /// `(type) operand`.
    Cast(TypeName, Box<Expr>, usize),
    /// `sizeof(type)`.
    SizeOf(TypeName, usize),
    /// A helper call: `container_of`, `per_cpu`, `list_for_each_entry`...
    Call {
        /// The helper's name ([`helper_signature`] knows it).
        name: String,
        /// Its arguments, of the kinds its signature says.
        args: Vec<Arg>,
        /// The column of the helper's name.
        col: usize,
    },
}

/// One argument of a helper call.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// An expression.
    Expr(Expr),
    /// A type name (`list_for_each_entry`'s entry type).
    Type(TypeName),
    /// A member path (`tasks`, `se.group_node`).
    Path(String, usize),
}

impl Expr {
    /// The column errors about this node point at (see [`Expr`]).
    pub fn col(&self) -> usize {
        match self {
            Expr::Num(_, c)
            | Expr::Name(_, c)
            | Expr::Index(_, _, c)
            | Expr::Unary(_, _, c)
            | Expr::Binary(_, _, _, c)
            | Expr::Cast(_, _, c)
            | Expr::SizeOf(_, c) => *c,
            Expr::Member { col, .. } | Expr::Call { col, .. } => *col,
        }
    }
}

/// Which helper takes which arguments: E expression, T type, M member path.
pub fn helper_signature(name: &str) -> Option<&'static str> {
    Some(match name {
        "container_of" => "ETM",
        "per_cpu" | "per_cpu_ptr" => "EE",
        "list_for_each_entry" | "hlist_for_each_entry" | "rbtree_inorder_for_each_entry" => "TEM",
        "list_for_each" | "hlist_for_each" => "E",
        _ => return None,
    })
}

/// A parser of one expression, over its tokens. Nesting and operator
/// counts are bounded, so that no input overflows the stack.
pub struct Parser<'a> {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    end_col: usize,
    is_type: &'a dyn Fn(&str) -> bool,
    /// Nesting of the recursive descent, bounded so that input cannot
    /// overflow the stack.
    depth: usize,
    /// Operators seen: left-nested chains (`a+b+c...`, `a.b.c...`) are
    /// built by loops, not recursion, but evaluating them recurses.
    ops: usize,
}

/// More operators than any real expression has.
const MAX_OPS: usize = 2000;

/// Deeper nesting than any real expression has.
const MAX_DEPTH: usize = 200;

const BINARY: &[(&str, u8)] = &[
    ("||", 1),
    ("&&", 2),
    ("|", 3),
    ("^", 4),
    ("&", 5),
    ("==", 6),
    ("!=", 6),
    ("<", 7),
    (">", 7),
    ("<=", 7),
    (">=", 7),
    ("<<", 8),
    (">>", 8),
    ("+", 9),
    ("-", 9),
    ("*", 10),
    ("/", 10),
    ("%", 10),
];

const TYPE_WORDS: &[&str] = &[
    "struct", "union", "enum", "unsigned", "signed", "int", "char", "short", "long", "void",
    "_Bool", "const", "volatile",
];

/// Whether a word is a C keyword the language reads (a type word, `sizeof`).
pub fn is_keyword(word: &str) -> bool {
    TYPE_WORDS.contains(&word) || word == "sizeof"
}

impl<'a> Parser<'a> {
    /// `is_type` says whether a bare name is a type (a typedef or base type).
    pub fn new(src: &str, is_type: &'a dyn Fn(&str) -> bool) -> Result<Parser<'a>> {
        Ok(Parser {
            toks: lex(src)?,
            pos: 0,
            end_col: src.len() + 1,
            is_type,
            depth: 0,
            ops: 0,
        })
    }

    /// The whole input as one expression; anything left after it is an
    /// error, at its column.
    pub fn parse(mut self) -> Result<Expr> {
        let e = self.expr(0)?;
        if let Some((t, col)) = self.toks.get(self.pos) {
            return Err(Error::syntax(*col, format!("unexpected {}", show(t))));
        }
        Ok(e)
    }

    fn count_op(&mut self) -> Result<()> {
        self.ops += 1;
        if self.ops > MAX_OPS {
            return Err(Error::syntax(
                self.col(),
                format!("more than {MAX_OPS} operators"),
            ));
        }
        Ok(())
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }

    fn col(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end_col, |t| t.1)
    }

    fn eat(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Punct(q)) if *q == p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> Result<()> {
        if self.eat(p) {
            return Ok(());
        }
        let found = self.peek().map_or("the end".to_owned(), show);
        Err(Error::syntax(
            self.col(),
            format!("expected {p:?}, found {found}"),
        ))
    }

    fn expr(&mut self, min: u8) -> Result<Expr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::syntax(self.col(), "expression nested too deeply"));
        }
        let r = self.expr_inner(min);
        self.depth -= 1;
        r
    }

    fn expr_inner(&mut self, min: u8) -> Result<Expr> {
        let mut lhs = self.unary()?;
        while let Some(Tok::Punct(p)) = self.peek() {
            let Some(&(op, prec)) = BINARY.iter().find(|(o, _)| o == p) else {
                break;
            };
            if prec <= min {
                break;
            }
            let col = self.col();
            self.count_op()?;
            self.pos += 1;
            let rhs = self.expr(prec)?;
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs), col);
        }
        Ok(lhs)
    }

    fn starts_type(&self, at: usize) -> bool {
        match self.toks.get(at).map(|t| &t.0) {
            Some(Tok::Ident(n)) => TYPE_WORDS.contains(&n.as_str()) || (self.is_type)(n),
            _ => false,
        }
    }

    /// Whether `(` at `at - 1` starts a cast to a name that is no known
    /// type: `(name *...)`, which no expression is, or `(name)` followed
    /// by what only a cast's operand can start with (`(no_such_t)1`,
    /// `(foo)x`). Evaluating it then says that the type is unknown.
    fn starts_unknown_cast(&self, at: usize) -> bool {
        let tok = |i: usize| self.toks.get(i).map(|t| &t.0);
        match tok(at) {
            Some(Tok::Ident(n)) if n != "sizeof" && helper_signature(n).is_none() => {}
            _ => return false,
        }
        let mut i = at + 1;
        while tok(i) == Some(&Tok::Punct("*")) {
            i += 1;
        }
        if tok(i) != Some(&Tok::Punct(")")) {
            return false;
        }
        i > at + 1
            || matches!(
                tok(i + 1),
                Some(Tok::Num(_) | Tok::Ident(_) | Tok::Str(_) | Tok::Punct("(" | "~" | "!"))
            )
    }

    fn type_name(&mut self) -> Result<TypeName> {
        let col = self.col();
        let mut words: Vec<String> = Vec::new();
        while let Some(Tok::Ident(n)) = self.peek() {
            let n = n.clone();
            if n == "const" || n == "volatile" {
                self.pos += 1;
                continue;
            }
            let tagged = words
                .last()
                .is_some_and(|w| matches!(w.as_str(), "struct" | "union" | "enum"));
            let is_word = TYPE_WORDS.contains(&n.as_str());
            if !words.is_empty() && !tagged && !is_word {
                break;
            }
            self.pos += 1;
            words.push(n.clone());
            if tagged || (!is_word && words.len() == 1) {
                break;
            }
        }
        if words.is_empty() {
            return Err(Error::syntax(col, "expected a type name"));
        }
        let mut pointers = 0;
        while self.eat("*") {
            pointers += 1;
        }
        Ok(TypeName {
            base: words.join(" "),
            pointers,
            col,
        })
    }

    fn unary(&mut self) -> Result<Expr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::syntax(self.col(), "expression nested too deeply"));
        }
        let r = self.unary_inner();
        self.depth -= 1;
        r
    }

    fn unary_inner(&mut self) -> Result<Expr> {
        let col = self.col();
        if let Some(Tok::Punct(p)) = self.peek() {
            let p = *p;
            if matches!(p, "*" | "&" | "-" | "~" | "!" | "+") {
                self.pos += 1;
                let e = self.unary()?;
                return Ok(Expr::Unary(p, Box::new(e), col));
            }
            if p == "("
                && (self.starts_type(self.pos + 1) || self.starts_unknown_cast(self.pos + 1))
            {
                self.pos += 1;
                let t = self.type_name()?;
                self.expect(")")?;
                let e = self.unary()?;
                return Ok(Expr::Cast(t, Box::new(e), col));
            }
        }
        if matches!(self.peek(), Some(Tok::Ident(n)) if n == "sizeof") {
            self.pos += 1;
            self.expect("(")?;
            let t = self.type_name()?;
            self.expect(")")?;
            return Ok(Expr::SizeOf(t, col));
        }
        let e = self.primary()?;
        self.postfix(e)
    }

    fn primary(&mut self) -> Result<Expr> {
        let col = self.col();
        match self.toks.get(self.pos).map(|t| t.0.clone()) {
            Some(Tok::Num(n)) => {
                self.pos += 1;
                Ok(Expr::Num(n, col))
            }
            Some(Tok::Ident(name)) => {
                self.pos += 1;
                if let Some(sig) = helper_signature(&name) {
                    if self.eat("(") {
                        let args = self.args(sig, &name)?;
                        return Ok(Expr::Call { name, args, col });
                    }
                }
                Ok(Expr::Name(name, col))
            }
            Some(Tok::Punct("(")) => {
                self.pos += 1;
                let e = self.expr(0)?;
                self.expect(")")?;
                Ok(e)
            }
            Some(t) => Err(Error::syntax(col, format!("unexpected {}", show(&t)))),
            None => Err(Error::syntax(col, "unexpected end of expression")),
        }
    }

    fn args(&mut self, sig: &str, name: &str) -> Result<Vec<Arg>> {
        let mut args = Vec::new();
        for (i, kind) in sig.chars().enumerate() {
            if i > 0 {
                self.expect(",")?;
            }
            args.push(match kind {
                'T' => Arg::Type(self.type_name()?),
                'M' => {
                    let col = self.col();
                    let mut path = String::new();
                    loop {
                        match self.peek() {
                            Some(Tok::Ident(n)) => path.push_str(&n.clone()),
                            _ => {
                                return Err(Error::syntax(
                                    self.col(),
                                    format!("{name}: expected a member name"),
                                ))
                            }
                        }
                        self.pos += 1;
                        while self.eat("[") {
                            match self.toks.get(self.pos).map(|t| t.0.clone()) {
                                Some(Tok::Num(n)) => {
                                    self.pos += 1;
                                    path.push_str(&format!("[{n}]"));
                                }
                                _ => {
                                    return Err(Error::syntax(
                                        self.col(),
                                        format!("{name}: expected an index"),
                                    ))
                                }
                            }
                            self.expect("]")?;
                        }
                        if !self.eat(".") {
                            break;
                        }
                        path.push('.');
                    }
                    Arg::Path(path, col)
                }
                _ => Arg::Expr(self.expr(0)?),
            });
        }
        self.expect(")")?;
        Ok(args)
    }

    fn postfix(&mut self, mut e: Expr) -> Result<Expr> {
        loop {
            let col = self.col();
            self.count_op()?;
            let arrow = if self.eat(".") {
                false
            } else if self.eat("->") {
                true
            } else if self.eat("[") {
                let i = self.expr(0)?;
                self.expect("]")?;
                e = Expr::Index(Box::new(e), Box::new(i), col);
                continue;
            } else {
                return Ok(e);
            };
            let member = self.member_name()?;
            e = Expr::Member {
                base: Box::new(e),
                member,
                arrow,
                col,
            };
        }
    }

    fn member_name(&mut self) -> Result<String> {
        match self.peek() {
            Some(Tok::Ident(n)) => {
                let n = n.clone();
                self.pos += 1;
                Ok(n)
            }
            _ => Err(Error::syntax(self.col(), "expected a member name")),
        }
    }
}

fn show(t: &Tok) -> String {
    match t {
        Tok::Ident(n) => quoted(n),
        Tok::Num(n) => n.to_string(),
        Tok::Str(s) => quoted(s),
        Tok::Punct(p) => format!("{p:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Expr> {
        Parser::new(s, &|n| n == "u64")?.parse()
    }

    #[test]
    fn precedence_casts_and_columns() {
        let e = parse("(struct task_struct *)0x10 + 2 * 3").unwrap();
        let Expr::Binary("+", l, r, 28) = e else {
            panic!("{e:?}")
        };
        assert!(
            matches!(*l, Expr::Cast(ref t, _, 1) if t.base == "struct task_struct" && t.pointers == 1)
        );
        assert!(matches!(*r, Expr::Binary("*", _, _, 32)));
        let e = parse("init_task.tasks.next->prev[1]").unwrap();
        assert!(matches!(e, Expr::Index(..)));
        assert!(matches!(parse("(u64)x").unwrap(), Expr::Cast(..)));
        assert!(matches!(parse("(x)").unwrap(), Expr::Name(..)));
        let e = parse("container_of(p, struct task_struct, se.group_node)").unwrap();
        assert!(
            matches!(e, Expr::Call { ref args, .. } if args[2] == Arg::Path("se.group_node".into(), 37))
        );
        let err = parse("init_task.").unwrap_err().to_string();
        assert!(err.contains("column 11"), "{err}");
        let err = parse("a + $").unwrap_err().to_string();
        assert!(err.contains("column 5"), "{err}");
        let deep = format!("{}1", "(".repeat(100_000));
        let err = parse(&deep).unwrap_err().to_string();
        assert!(err.contains("nested too deeply"), "{err}");
        let deep = format!("{}1", "-".repeat(100_000));
        assert!(parse(&deep).is_err());
        let long = format!("1{}", "+1".repeat(100_000));
        assert!(parse(&long).unwrap_err().to_string().contains("operators"));
        let long = format!("x{}", ".a".repeat(100_000));
        assert!(parse(&long).unwrap_err().to_string().contains("operators"));
        let err = parse("(a").unwrap_err().to_string();
        assert!(err.contains("column 3"), "{err}");
    }

    /// A parenthesized name followed by an operand, or with `*`s, can only
    /// be a cast: to a type the evaluation then names as unknown. A name
    /// in parentheses that an operator follows stays an expression.
    #[test]
    fn casts_to_names_that_are_no_known_type() {
        for (src, base, pointers) in [
            ("(no_such_typedef)1", "no_such_typedef", 0),
            ("(foo)x", "foo", 0),
            ("(foo)(x)", "foo", 0),
            ("(foo)~1", "foo", 0),
            ("(foo *)0", "foo", 1),
            ("(foo **)-1", "foo", 2),
        ] {
            match parse(src) {
                Ok(Expr::Cast(t, _, 1)) => {
                    assert_eq!(
                        (t.base.as_str(), t.pointers, t.col),
                        (base, pointers, 2),
                        "{src}"
                    )
                }
                e => panic!("{src}: {e:?}"),
            }
        }
        for src in [
            "(x) - 1", "(x) * 2", "(x) & 1", "(x)", "(x)[1]", "(x).a", "(x)->a",
        ] {
            assert!(!matches!(parse(src), Ok(Expr::Cast(..))), "{src}");
        }
        assert!(parse("(sizeof)1").is_err());
    }
}
