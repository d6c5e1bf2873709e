//! How bpftool describes where a LOC_PARAM finds its value: `reg1`,
//! `*(reg2 + 0x10)`, `fbreg - 0x10`, `0x123456789abcdef0 (addr)`.
//!
//! The forms are those of bpf-next's bpftool as its selftest
//! (`test_bpftool_btf_dump`'s `loc_dump`) expects them. Forms that test does
//! not show follow the same pattern: a register dereference without an
//! offset is `*(reg1)`, a two-register value `reg1:reg2`, and a signed
//! constant below zero `-0x10`.

use crate::format::*;
use crate::TypeData;

/// The register a number names: DW_OP_reg numbering, or the frame base.
fn reg_name(r: u32) -> String {
    if r == BTF_LOC_PARAM_FBREG {
        "fbreg".to_owned()
    } else {
        format!("reg{r}")
    }
}

/// `-0x10` or `0x10`, as the value reads when `signed`, `size` bytes wide.
fn hex(v: u64, size: u32, signed: bool) -> String {
    if signed {
        let bits = (size.clamp(1, 8) * 8) as u64;
        let shifted = (v << (64 - bits)) as i64 >> (64 - bits);
        if shifted < 0 {
            return format!("-{:#x}", shifted.unsigned_abs());
        }
    }
    format!("{v:#x}")
}

/// The location a LOC_PARAM describes, or `None` for another kind.
pub(crate) fn describe(data: &TypeData) -> Option<String> {
    let TypeData::LocParam {
        size,
        flags,
        values,
    } = data
    else {
        return None;
    };
    let signed = flags & BTF_LOC_PARAM_SIGNED != 0;
    let text = if flags & BTF_LOC_PARAM_REG != 0 {
        let reg = values
            .first()
            .map_or_else(|| "?".to_owned(), |&r| reg_name(r));
        let expr = match values.get(1) {
            Some(&off) if flags & BTF_LOC_PARAM_OFFSET != 0 => {
                let off = if signed {
                    off as i32 as i64
                } else {
                    off as i64
                };
                let sign = if off < 0 { '-' } else { '+' };
                format!("{reg} {sign} {:#x}", off.unsigned_abs())
            }
            Some(&second) => format!("{reg}:{}", reg_name(second)),
            None => reg,
        };
        if flags & BTF_LOC_PARAM_DEREF != 0 {
            format!("*({expr})")
        } else {
            expr
        }
    } else if flags & BTF_LOC_PARAM_CONST != 0 {
        let lo = values.first().copied().unwrap_or(0) as u64;
        let hi = values.get(1).copied().unwrap_or(0) as u64;
        let v = hi << 32 | lo;
        let mut s = hex(v, *size, signed);
        if flags & BTF_LOC_PARAM_ADDR != 0 {
            s.push_str(" (addr)");
        }
        s
    } else {
        values
            .iter()
            .map(|v| format!("{v:#x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    Some(text)
}
