//! `btf_check_type_tags`: TYPE_TAGs come first in a chain of modifiers.

use super::*;

impl Validator<'_> {
    /// `btf_check_type_tags`: in a chain of modifiers, TYPE_TAGs come first,
    /// and no chain is longer than 32.
    pub(super) fn check_type_tags(&mut self) {
        let mut good_id = 0;
        for i in self.report_from..self.n {
            if !self.kinds[i as usize].is_modifier_or_typedef() || self.is_bad(i) {
                continue;
            }
            let mut chain_limit = 32;
            let mut in_tags = self.kinds[i as usize] == BTF_KIND_TYPE_TAG;
            let mut cur = i;
            while let Some(k) = self.kind(cur).filter(|&k| k.is_modifier_or_typedef()) {
                if chain_limit == 0 {
                    self.report(
                        i,
                        Rule::TypeTag,
                        "chain of more than 32 modifiers, or a cycle".into(),
                    );
                    break;
                }
                chain_limit -= 1;
                if k == BTF_KIND_TYPE_TAG {
                    if !in_tags {
                        self.report(
                            i,
                            Rule::TypeTag,
                            format!("type tag {} follows a modifier", self.describe(cur)),
                        );
                        break;
                    }
                } else {
                    in_tags = false;
                }
                if cur <= good_id {
                    break;
                }
                cur = self.ty(cur).map_or(0, Type::size_or_type);
            }
            good_id = i;
        }
    }
}
