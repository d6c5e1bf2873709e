//! The bpf-next location kinds: LOC_PARAM values and flags, and what
//! LOC_PROTO and LOCSEC entries refer to.

use super::*;

impl Validator<'_> {
    /// A LOC_PARAM's size, flags and number of values, as the bpf-next uapi
    /// header defines them (see [`Target::BpfNext`]).
    pub(super) fn check_loc_param(&mut self, id: TypeId, size: u32, flags: u32, vlen: usize) {
        if !matches!(size, 1 | 2 | 4 | 8) {
            self.report(id, Rule::Size, format!("size {size} is not 1, 2, 4 or 8"));
        }
        if flags & !BTF_LOC_PARAM_FLAGS_MASK != 0 {
            self.report(
                id,
                Rule::Location,
                format!("flags {flags:#x} set undefined bits"),
            );
            return;
        }
        let is_reg = flags & BTF_LOC_PARAM_REG != 0;
        let is_const = flags & BTF_LOC_PARAM_CONST != 0;
        let problem = if is_reg == is_const {
            Some("flags must have exactly one of CONST and REG".to_owned())
        } else if is_const && flags & (BTF_LOC_PARAM_DEREF | BTF_LOC_PARAM_OFFSET) != 0 {
            Some("a constant cannot have DEREF or OFFSET".to_owned())
        } else if is_reg && flags & BTF_LOC_PARAM_ADDR != 0 {
            Some("ADDR applies only to a constant".to_owned())
        } else if is_const && vlen != (size as usize).div_ceil(4).max(1) {
            Some(format!(
                "a {size}-byte constant needs {} values, has {vlen}",
                (size as usize).div_ceil(4).max(1)
            ))
        } else if is_reg && flags & BTF_LOC_PARAM_OFFSET != 0 && vlen != 2 {
            Some(format!(
                "a register with an offset needs 2 values, has {vlen}"
            ))
        } else if is_reg && !(1..=2).contains(&vlen) {
            Some(format!(
                "a register location needs 1 or 2 values, has {vlen}"
            ))
        } else if is_reg
            && vlen == 2
            && flags & BTF_LOC_PARAM_OFFSET == 0
            && flags & BTF_LOC_PARAM_DEREF != 0
        {
            Some("a two-register value cannot be dereferenced".to_owned())
        } else {
            None
        };
        if let Some(p) = problem {
            self.report(id, Rule::Location, format!("flags {flags:#x}: {p}"));
        }
    }

    /// What LOC_PROTO and LOCSEC entries refer to: a LOC_PROTO lists
    /// LOC_PARAMs (or 0, no location), a LOCSEC lists FUNCs with LOC_PROTOs.
    pub(super) fn check_locations(&mut self) {
        for id in self.report_from..self.n {
            let Some(t) = self.ty(id) else { continue };
            if self.is_bad(id) {
                continue;
            }
            let mut wrong = Vec::new();
            match &t.data {
                TypeData::LocProto { params } => {
                    for (i, &p) in params.iter().enumerate() {
                        if p != 0 && self.kind(p) != Some(BTF_KIND_LOC_PARAM) {
                            wrong.push(format!(
                                "parameter {i} refers to {}, not a LOC_PARAM",
                                self.describe(p)
                            ));
                        }
                    }
                }
                TypeData::Locsec { locs } => {
                    for (i, l) in locs.iter().enumerate() {
                        if self.kind(l.func) != Some(BTF_KIND_FUNC) || l.func == 0 {
                            wrong.push(format!(
                                "site {i} refers to {}, not a FUNC",
                                self.describe(l.func)
                            ));
                        }
                        if self.kind(l.loc_proto) != Some(BTF_KIND_LOC_PROTO) || l.loc_proto == 0 {
                            wrong.push(format!(
                                "site {i} refers to {}, not a LOC_PROTO",
                                self.describe(l.loc_proto)
                            ));
                        }
                    }
                }
                _ => continue,
            }
            for w in wrong {
                self.report(id, Rule::Location, w);
            }
        }
    }
}
