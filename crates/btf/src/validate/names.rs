//! Names: valid identifiers and section names as the kernel's lib/ctype.c
//! classifies bytes, name offsets inside the string section, anonymity.

use super::*;

/// `isalpha` of the kernel's lib/ctype.c, which classifies Latin-1: bytes
/// 0xc0-0xff are letters too, except × and ÷.
fn kernel_isalpha(c: u8) -> bool {
    c.is_ascii_alphabetic() || (c >= 0xc0 && c != 0xd7 && c != 0xf7)
}

/// `isprint` of lib/ctype.c: ASCII 0x20-0x7e and Latin-1 0xa0-0xff.
fn kernel_isprint(c: u8) -> bool {
    (0x20..0x7f).contains(&c) || c >= 0xa0
}

/// `__btf_name_char_ok` and `btf_name_valid_identifier`: a C identifier,
/// where the kernel also accepts dots (LLVM writes names like `foo.bar`),
/// at most KSYM_NAME_LEN bytes.
pub(super) fn valid_identifier(s: &[u8]) -> bool {
    match s.split_first() {
        Some((&first, rest)) => {
            s.len() <= KSYM_NAME_LEN
                && (kernel_isalpha(first) || first == b'_' || first == b'.')
                && rest
                    .iter()
                    .all(|&c| kernel_isalpha(c) || c.is_ascii_digit() || c == b'_' || c == b'.')
        }
        None => false,
    }
}

/// `btf_name_valid_section`: printable, at most KSYM_NAME_LEN bytes.
fn valid_section_name(s: &[u8]) -> bool {
    !s.is_empty() && s.len() <= KSYM_NAME_LEN && s.iter().all(|&c| kernel_isprint(c))
}

impl<'a> Validator<'a> {
    /// `btf_name_offset_valid`: inside the string section and below 2^24.
    pub(super) fn name(&self, off: u32) -> Option<&'a [u8]> {
        if off > BTF_MAX_NAME_OFFSET {
            return None;
        }
        self.btf.str_bytes(off).ok()
    }

    /// Requires a valid identifier at `off`; `optional` also accepts offset 0.
    pub(super) fn check_ident(
        &mut self,
        id: TypeId,
        off: u32,
        optional: bool,
        what: &dyn fmt::Display,
    ) {
        if off == 0 && optional {
            return;
        }
        match self.name(off) {
            None => self.report(
                id,
                Rule::NameOffset,
                format!("{what} name offset {off:#x} is outside the string section"),
            ),
            Some([]) => self.report(id, Rule::Name, format!("{what} needs a name")),
            Some(s) if !valid_identifier(s) => self.report(
                id,
                Rule::Name,
                format!(
                    "{what} name '{}' is not a valid identifier",
                    String::from_utf8_lossy(s)
                ),
            ),
            Some(_) => {}
        }
    }

    /// `btf_name_valid_section`, for DATASEC and LOCSEC names.
    pub(super) fn check_section_name(&mut self, id: TypeId, off: u32) {
        match self.name(off) {
            Some(s) if valid_section_name(s) => {}
            Some(s) => self.report(
                id,
                Rule::Name,
                format!(
                    "section name '{}' is empty, too long or not printable",
                    String::from_utf8_lossy(s)
                ),
            ),
            None => {}
        }
    }

    pub(super) fn check_anon(&mut self, id: TypeId, t: &Type) {
        if t.name_off != 0 {
            self.report(
                id,
                Rule::Name,
                format!("must be anonymous, has name offset {:#x}", t.name_off),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_follow_the_kernel() {
        assert!(valid_identifier(b"foo_bar1"));
        assert!(valid_identifier(b"_x"));
        assert!(valid_identifier(b"foo.isra.0"));
        assert!(!valid_identifier(b""));
        assert!(!valid_identifier(b"1abc"));
        assert!(!valid_identifier(b"a-b"));
        assert!(valid_identifier(&[b'a'; KSYM_NAME_LEN]));
        assert!(!valid_identifier(&[b'a'; KSYM_NAME_LEN + 1]));
        assert!(valid_section_name(b".data..percpu"));
        assert!(valid_section_name(b"a b"));
        assert!(!valid_section_name(b"a\nb"));
        // lib/ctype.c is Latin-1: é is a letter, × is not, 0x85 is a control.
        assert!(valid_identifier(b"caf\xe9"));
        assert!(!valid_identifier(b"a\xd7b"));
        assert!(!valid_section_name(b"a\x85"));
    }
}
