//! Each kind's `check_member`: does a member lie inside its STRUCT or UNION?

use super::*;

impl Validator<'_> {
    /// Each kind's `check_member` / `check_kflag_member`: does the member,
    /// typed `mty`, lie inside the aggregate `st`?
    pub(super) fn check_member(&self, st: &Type, i: usize, m: &Member, mty: TypeId) -> Step {
        let Some(k) = self.kind(mty) else {
            return Err(Fail::Problem(Rule::Member, self.describe(mty)));
        };
        let size = st.size_or_type();
        let label = || self.member_label(i, m);
        if k.is_modifier_or_typedef() {
            return match self.type_id_size(mty) {
                Some((rid, _)) => self.check_member(st, i, m, rid),
                None => problem(format!("{} has no size", label())),
            };
        }
        // With kind_flag, the offset word packs a bitfield size; only INT and
        // ENUM members may be bitfields.
        let bitfield = m.bitfield_size(st.kind_flag);
        let bit_off = m.bit_offset(st.kind_flag);
        if st.kind_flag
            && bitfield != 0
            && !matches!(k, BTF_KIND_INT | BTF_KIND_ENUM | BTF_KIND_ENUM64)
        {
            return problem(format!(
                "{} is a {bitfield}-bit bitfield of {}, which is not an integer",
                label(),
                self.describe(mty)
            ));
        }
        let at = MemberAt {
            v: self,
            i,
            m,
            mty,
            size,
            bitfield,
            bit_off,
            kind_flag: st.kind_flag,
        };
        match k {
            BTF_KIND_INT => at.int(),
            BTF_KIND_ENUM | BTF_KIND_ENUM64 if st.kind_flag => at.kflag_enum(),
            BTF_KIND_PTR | BTF_KIND_ARRAY | BTF_KIND_STRUCT | BTF_KIND_UNION | BTF_KIND_ENUM
            | BTF_KIND_ENUM64 => at.sized(k),
            BTF_KIND_FLOAT => at.float(),
            _ => problem(format!(
                "{} has type {}, which cannot be a member",
                label(),
                self.describe(mty)
            )),
        }
    }
}

fn problem(detail: String) -> Step {
    Err(Fail::Problem(Rule::Member, detail))
}

/// Member `i` (`m`, typed `mty`) of an aggregate of `size` bytes, at
/// `bit_off`, `bitfield` bits wide if the aggregate's `kind_flag` says so.
struct MemberAt<'v, 'a> {
    v: &'v Validator<'a>,
    i: usize,
    m: &'v Member,
    mty: TypeId,
    size: u32,
    bitfield: u32,
    bit_off: u32,
    kind_flag: bool,
}

impl MemberAt<'_, '_> {
    fn label(&self) -> meta::MemberLabel<'_> {
        self.v.member_label(self.i, self.m)
    }

    fn exceeds(&self, bits: u64) -> Step {
        let (bit_off, size) = (self.bit_off, self.size);
        problem(format!(
            "{} bit offset {bit_off} + size {bits} past struct size {size}",
            self.label()
        ))
    }

    /// `btf_int_check_member` and `btf_int_check_kflag_member`.
    fn int(&self) -> Step {
        let MemberAt {
            v,
            mty,
            size,
            bitfield,
            bit_off,
            kind_flag,
            ..
        } = *self;
        let Some(TypeData::Int {
            offset: int_off,
            bits,
            ..
        }) = v.ty(mty).map(|t| &t.data)
        else {
            return problem(self.label().to_string());
        };
        let (int_off, bits) = (*int_off as u32, *bits as u32);
        let (off, nr_bits) = if kind_flag {
            if !v.ty(mty).is_some_and(int_is_regular) {
                return problem(format!(
                    "{} of {} needs a regular INT (whole bytes, no bit offset)",
                    self.label(),
                    v.describe(mty)
                ));
            }
            if bitfield == 0 {
                if bit_off % 8 != 0 {
                    return problem(format!(
                        "{} bit offset {bit_off} is not byte aligned",
                        self.label()
                    ));
                }
                (bit_off, bits)
            } else if bitfield > bits {
                return problem(format!(
                    "{} bitfield of {bitfield} bits is wider than its {bits}-bit type",
                    self.label()
                ));
            } else {
                (bit_off, bitfield)
            }
        } else {
            let Some(off) = bit_off.checked_add(int_off) else {
                return problem(format!("{} bit offset overflows 32 bits", self.label()));
            };
            (off, bits)
        };
        let bytes_off = off / 8;
        let nr_copy_bits = nr_bits + off % 8;
        if nr_copy_bits > BITS_PER_U128 {
            return problem(format!(
                "{} spans {nr_copy_bits} bits, more than {BITS_PER_U128}",
                self.label()
            ));
        }
        if size < bytes_off || size - bytes_off < nr_copy_bits.div_ceil(8) {
            return self.exceeds(nr_bits as u64);
        }
        Ok(())
    }

    /// `btf_enum_check_kflag_member`.
    fn kflag_enum(&self) -> Step {
        let MemberAt {
            size,
            bitfield,
            bit_off,
            ..
        } = *self;
        // The kernel sizes every enum member as an int here.
        let nr_bits = if bitfield == 0 {
            if bit_off % 8 != 0 {
                return problem(format!(
                    "{} bit offset {bit_off} is not byte aligned",
                    self.label()
                ));
            }
            32
        } else if bitfield > 32 {
            return problem(format!(
                "{} bitfield of {bitfield} bits is wider than an int",
                self.label()
            ));
        } else {
            bitfield
        };
        if (size as u64) < (bit_off as u64 + nr_bits as u64).div_ceil(8) {
            return self.exceeds(nr_bits as u64);
        }
        Ok(())
    }

    /// `btf_generic_check_kflag_member` and the other kinds' `check_member`:
    /// whole bytes that fit.
    fn sized(&self, k: Kind) -> Step {
        let MemberAt {
            v,
            mty,
            size,
            bit_off,
            ..
        } = *self;
        if bit_off % 8 != 0 {
            return problem(format!(
                "{} bit offset {bit_off} is not byte aligned",
                self.label()
            ));
        }
        let msize = match k {
            BTF_KIND_PTR => PTR_SIZE,
            BTF_KIND_ARRAY => v.type_id_size(mty).map_or(0, |(_, s)| s),
            _ => v.ty(mty).map_or(0, Type::size_or_type),
        };
        // The kernel subtracts in u32: an offset past the end was
        // already refused by the per-type check.
        if size.wrapping_sub(bit_off / 8) < msize {
            return self.exceeds(msize as u64 * 8);
        }
        Ok(())
    }

    /// `btf_float_check_member`.
    fn float(&self) -> Step {
        let MemberAt {
            v,
            mty,
            size,
            bit_off,
            ..
        } = *self;
        let msize = v.ty(mty).map_or(0, Type::size_or_type);
        let align_bits = msize.min(PTR_SIZE) as u64 * 8;
        if align_bits != 0 && bit_off as u64 % align_bits != 0 {
            return problem(format!(
                "{} bit offset {bit_off} is not aligned for a {msize}-byte FLOAT",
                self.label()
            ));
        }
        if bit_off as u64 / 8 + msize as u64 > size as u64 {
            return self.exceeds(msize as u64 * 8);
        }
        Ok(())
    }
}
