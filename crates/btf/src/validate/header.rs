//! Header and string section rules of a parsed [`Btf`].

use super::*;

impl Validator<'_> {
    /// Header and string section rules (`btf_parse_hdr`, `btf_parse_str_sec`).
    pub(super) fn check_blob(&mut self) {
        let btf = self.btf;
        let h = btf.header();
        if h.flags != 0 {
            self.report_blob(Rule::Header, format!("flags {:#x} must be 0", h.flags));
        }
        let known_hdr = match self.target {
            Target::Linux6_18 => BTF_HEADER_LEN,
            Target::BpfNext => BTF_HEADER_LAYOUT_LEN,
        };
        let past_known = (known_hdr - BTF_HEADER_LEN) as usize;
        if h.extra.iter().skip(past_known).any(|&b| b != 0) {
            self.report_blob(
                Rule::Header,
                format!(
                    "hdr_len {} carries non-zero fields past the {known_hdr} bytes {} knows",
                    h.hdr_len,
                    self.target.name()
                ),
            );
        }
        if self.target == Target::BpfNext {
            self.check_layout_section();
        }
        if h.type_off % 4 != 0 {
            self.report_blob(
                Rule::Header,
                format!(
                    "type section offset {:#x} is not 4-byte aligned",
                    h.type_off
                ),
            );
        }
        let strings = btf.string_section();
        if btf.base().is_none() && strings.is_empty() {
            self.report_blob(Rule::Strings, "string section is empty".into());
        }
        if strings.len() > BTF_MAX_NAME_OFFSET as usize + 1 {
            self.report_blob(
                Rule::Strings,
                format!(
                    "string section of {} bytes is past the largest name offset {BTF_MAX_NAME_OFFSET:#x}",
                    strings.len()
                ),
            );
        }
        if strings.last().is_some_and(|&b| b != 0) {
            self.report_blob(Rule::Strings, "string section is not NUL-terminated".into());
        }
        if btf.base().is_none() && btf.own_types().is_empty() {
            self.report_blob(Rule::TypeCount, "no types".into());
        }
        if btf.type_count() > BTF_MAX_TYPE {
            self.report_blob(
                Rule::TypeCount,
                format!(
                    "{} type ids exceed the kernel's limit of {BTF_MAX_TYPE}",
                    btf.type_count()
                ),
            );
        }
    }

    /// The layout section (bpf-next): one record per kind, whose sizes for
    /// the kinds with a fixed layout must be those sizes (a reader that
    /// trusts the section would otherwise skip the wrong number of bytes),
    /// and whose flags are unused.
    fn check_layout_section(&mut self) {
        for (kind, l) in self.btf.kind_layouts().into_iter().enumerate() {
            let kind = Kind::new(kind as u8);
            if let Some(known) = known_layout(kind) {
                if (l.info_sz, l.elem_sz) != (known.info_sz, known.elem_sz) {
                    self.report_blob(
                        Rule::Layout,
                        format!(
                            "layout of kind {kind} ({}) says info_sz {} elem_sz {}, not {} and {}",
                            kind_name(kind),
                            l.info_sz,
                            l.elem_sz,
                            known.info_sz,
                            known.elem_sz
                        ),
                    );
                }
            }
            if l.info_sz % 4 != 0 || l.elem_sz % 4 != 0 {
                self.report_blob(
                    Rule::Layout,
                    format!(
                        "layout of kind {kind}: info_sz {} and elem_sz {} must be multiples of 4",
                        l.info_sz, l.elem_sz
                    ),
                );
            }
            if l.flags != 0 {
                self.report_blob(
                    Rule::Layout,
                    format!(
                        "layout of kind {kind}: flags {:#x} are unused and must be 0",
                        l.flags
                    ),
                );
            }
        }
    }
}
