//! Sizes, alignments, packing and explicit padding, as libbpf 1.1 infers
//! them: BTF records offsets and sizes but not alignment, so the header must
//! make a C compiler reproduce BTF's offsets from what it can deduce.

use super::{Dumper, MAX_DEPTH};
use crate::{Kind, Member, Type, TypeData, TypeId};

/// Round `x` up to a multiple of `y`; a non-positive `y` (an alignment
/// that could not be computed) leaves `x` alone.
fn roundup(x: i64, y: i64) -> i64 {
    if y <= 0 {
        x
    } else {
        (x + y - 1) / y * y
    }
}

impl Dumper<'_> {
    /// The natural alignment of a type in bytes, 0 when it has none (void,
    /// functions, forward declarations, or anything containing them).
    pub(super) fn align_of(&mut self, id: TypeId) -> u32 {
        self.align_of_at(id, 0)
    }

    fn align_of_at(&mut self, id: TypeId, depth: u32) -> u32 {
        let cached = self.align_cache[id as usize];
        if cached != u32::MAX {
            return cached;
        }
        // Past the bound (only a reference loop gets there) the type counts
        // as having no alignment, like the kinds libbpf does not support.
        if depth > MAX_DEPTH {
            return 0;
        }
        let Some(t) = self.get(id) else {
            return 0;
        };
        let align = match &t.data {
            TypeData::Int { size, .. }
            | TypeData::Enum { size, .. }
            | TypeData::Enum64 { size, .. }
            | TypeData::Float { size } => self.ptr_sz.min(*size),
            TypeData::Ptr { .. } => self.ptr_sz,
            TypeData::Array(a) => self.align_of_at(a.elem, depth + 1),
            TypeData::Struct { size, members } | TypeData::Union { size, members } => {
                self.composite_align(t, *size, members, depth)
            }
            _ => t
                .ref_type_in(Kind::is_modifier_or_typedef)
                .map_or(0, |ty| self.align_of_at(ty, depth + 1)),
        };
        self.align_cache[id as usize] = align;
        align
    }

    /// A struct's alignment is its largest member's, or 1 if the layout
    /// shows it packed; 0 if a member has none.
    fn composite_align(&mut self, t: &Type, size: u32, members: &[Member], depth: u32) -> u32 {
        let mut max_align = 1;
        for m in members {
            let align = self.align_of_at(m.ty, depth + 1);
            if align == 0 {
                return 0;
            }
            max_align = max_align.max(align);
            // The raw offset word: for a non-bitfield it is the bit offset.
            if m.bitfield_size(t.kind_flag) == 0 && m.offset % (8 * align) != 0 {
                return 1;
            }
        }
        if size % max_align != 0 {
            return 1;
        }
        max_align
    }

    /// Whether a struct needs `__attribute__((packed))`: a non-bitfield
    /// member off its natural alignment, or a size that is not a multiple of
    /// the largest member alignment. A struct declared packed whose layout is
    /// natural anyway is (harmlessly) not marked.
    pub(super) fn is_packed(&mut self, t: &Type, size: u32, members: &[Member]) -> bool {
        let mut max_align = 1;
        for m in members {
            let align = self.align_of(m.ty);
            if align != 0 && m.bitfield_size(t.kind_flag) == 0 && m.offset % (8 * align) != 0 {
                return true;
            }
            max_align = max_align.max(align);
        }
        size % max_align != 0
    }

    /// Fills the gap from bit `cur` to bit `next` with anonymous bitfields so
    /// that a compiler puts the next member (aligned to `next_align` bytes)
    /// exactly at `next`. First the widest of long/int/short/char whose
    /// alignment boundary falls inside the gap is chosen; a `T: 0;` marker
    /// forces that boundary when natural alignment would not reach it (or,
    /// after a bitfield, `T: n;` with the exact count); then the rest is
    /// filled with whole `T: bits;` units and a smallest-fitting remainder.
    pub(super) fn emit_bit_padding(
        &mut self,
        mut cur: i64,
        next: i64,
        next_align: u32,
        in_bitfield: bool,
        lvl: u32,
    ) {
        if cur >= next {
            return;
        }
        let pads: [(&[u8], i64); 4] = [
            (b"long", i64::from(self.ptr_sz) * 8),
            (b"int", 32),
            (b"short", 16),
            (b"char", 8),
        ];
        let (mut pad_type, mut pad_bits) = pads[pads.len() - 1];
        let mut new_off = cur;
        for &(name, bits) in &pads {
            pad_type = name;
            pad_bits = bits;
            new_off = roundup(cur, bits);
            if new_off <= next {
                break;
            }
        }
        if new_off > cur && new_off <= next {
            let aligned_next = roundup(cur, i64::from(next_align) * 8);
            if in_bitfield
                || (new_off == next && aligned_next != new_off)
                || (new_off != next && next - new_off <= new_off - cur)
            {
                self.put_pad(lvl, pad_type, if in_bitfield { new_off - cur } else { 0 });
            }
            cur = new_off;
        }
        while cur != next {
            let bits = (next - cur).min(pad_bits);
            if bits == pad_bits {
                self.put_pad(lvl, pad_type, pad_bits);
                cur += bits;
                continue;
            }
            // The remainder: the smallest type that holds it; it also
            // becomes the unit for what is left.
            for &(name, width) in pads.iter().rev() {
                pad_type = name;
                pad_bits = width;
                if width >= bits {
                    break;
                }
            }
            self.put_pad(lvl, pad_type, bits);
            cur += bits;
        }
    }

    fn put_pad(&mut self, lvl: u32, ty: &[u8], bits: i64) {
        self.put(b"\n");
        self.put_indent(lvl);
        self.put(ty);
        self.put(b": ");
        self.put_i64(bits);
        self.put(b";");
    }
}
