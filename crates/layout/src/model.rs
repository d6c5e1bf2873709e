//! The type model behind pahole's layout view: what pahole's loaders make
//! of BTF (or DWARF) types, and the facts it derives from them — sizes,
//! natural alignments, holes and the `__packed__`/`__aligned__` guesses.
//!
//! pahole's guesses are not pure functions of one type: deciding that a
//! struct is packed can mark the struct types of its members packed too
//! (a member at an offset its type's alignment forbids), and a union marks
//! member structs whose alignment does not divide the union's size. Those
//! marks stick for the rest of the run, so the output for a struct depends
//! on what was printed before it. [`Model`] keeps that state per type, and
//! the printer drives it in pahole's order so that a whole run prints the
//! same bytes as pahole's.

use btf::{Btf, TypeData, TypeId};

/// pahole's view of one type id (`struct tag` and its subclasses).
#[derive(Clone, Debug)]
pub enum Node<'a> {
    /// `DW_TAG_base_type`: BTF INT or FLOAT.
    Base {
        /// The type's name (`int`, `unsigned char`); `None` when anonymous.
        name: Option<&'a str>,
        /// Size in bits: a BTF INT's value bits (`BTF_INT_BITS`), 8 × a FLOAT's
        /// size in bytes, 8 × DW_AT_byte_size from DWARF. [`Model::size`] is
        /// `bits / 8` bytes.
        bits: u32,
        /// pahole's `base_type.is_bool`: the name prints as `bool NAME`.
        /// pahole's BTF loader never sets it (it keeps `BTF_INT_BOOL` in a
        /// one-bit field), nor does btfkit's DWARF loader.
        is_bool: bool,
        /// A BTF FLOAT: pahole's `__tag__name` prints its name as
        /// `single NAME`.
        is_float: bool,
    },
    /// A pointer to the type id (0: `void *`); [`Model::addr_size`] bytes.
    Pointer(TypeId),
    /// `const` of the type id (0: `void`).
    Const(TypeId),
    /// `volatile` of the type id (0: `void`).
    Volatile(TypeId),
    /// `restrict` of the type id (0: `void`).
    Restrict(TypeId),
    /// A typedef (`DW_TAG_typedef`, BTF TYPEDEF).
    Typedef {
        /// The typedef's name.
        name: Option<&'a str>,
        /// The type it names (0: `void`).
        ty: TypeId,
    },
    /// BTF has one dimension per array type; DWARF keeps them together.
    Array {
        /// The element type, under all the dimensions.
        elem: TypeId,
        /// Element counts, outermost first (`int m[2][3]` has `[2, 3]`); a 0 is
        /// a flexible or zero-length array.
        dims: Vec<u32>,
    },
    /// A struct, union or forward declaration of one.
    Class(Class<'a>),
    /// An enumeration (`DW_TAG_enumeration_type`, BTF ENUM or ENUM64).
    Enum {
        /// The enum's tag name; `None` when anonymous.
        name: Option<&'a str>,
        /// Size in bits (pahole keeps enum sizes in bits).
        bits: u32,
        /// Values print as signed: the enum's base type is signed (DWARF), or
        /// its kind_flag is set (BTF; pahole's BTF loader reads it from 1.26 on).
        signed: bool,
        /// The enumerators in order, each a name and its value's 64 bits (a
        /// signed 32-bit value sign-extended); read as signed when `signed`.
        values: Vec<(Option<&'a str>, u64)>,
    },
    /// A function prototype (`DW_TAG_subroutine_type`, BTF FUNC_PROTO).
    FuncProto {
        /// The return type (0: `void`).
        ret: TypeId,
        /// The parameters in order, each a name (`None` when unnamed) and a
        /// type, without the trailing `...`.
        params: Vec<(Option<&'a str>, TypeId)>,
        /// A trailing `...`.
        unspec: bool,
    },
    /// A function (BTF FUNC, `DW_TAG_subprogram`): kept so that its id
    /// resolves; the layout view prints none.
    Func {
        /// The function's name.
        name: Option<&'a str>,
    },
    /// A variable (BTF VAR, `DW_TAG_variable`): kept so that its id
    /// resolves; the layout view prints none.
    Variable {
        /// The variable's name.
        name: Option<&'a str>,
    },
}

/// pahole's `struct class` (with its `struct type`): a struct, a union or a
/// forward declaration of one, with what pahole derives from it: holes, natural
/// alignment, `__packed__`.
#[derive(Clone, Debug)]
pub struct Class<'a> {
    /// The tag name; `None` when anonymous.
    pub name: Option<&'a str>,
    /// A union (or a forward declaration of one); otherwise a struct.
    pub is_union: bool,
    /// A forward declaration (BTF FWD, DW_AT_declaration): no size, no members.
    pub declaration: bool,
    /// Defined at the top of its unit, not inside a function or another
    /// type: pahole lists only those when printing every struct.
    pub top_level: bool,
    /// Size in bytes (BTF's `size`, DW_AT_byte_size); 0 for a declaration.
    pub size: u32,
    /// The members in declaration order.
    pub members: Vec<Member<'a>>,
    /// `__aligned__` of the type itself: inferred for BTF, DW_AT_alignment for DWARF.
    pub alignment: u32,
    /// Holes found by [`Model::find_holes`]; valid once `holes_searched`.
    pub holes: Holes,
    /// [`Model::find_holes`] has run: `holes` and the members' `hole` and
    /// `bit_hole` are valid.
    pub holes_searched: bool,
    /// Printed with `__attribute__((__packed__))`: guessed by
    /// [`Model::infer_packed`], or marked by a struct or union that holds this
    /// one at an offset its alignment forbids (see the module doc).
    pub is_packed: bool,
    /// `is_packed` is settled (guessed or marked) and is not guessed again.
    pub packed_inferred: bool,
    /// 0 until computed (pahole's `type->natural_alignment`).
    pub natural_alignment: u32,
    /// `class__has_embedded_flexible_array`, once computed.
    embedded_flexible_array: Option<bool>,
}

impl<'a> Class<'a> {
    /// A struct or union as a loader reads it, before any inference.
    pub fn new(
        name: Option<&'a str>,
        is_union: bool,
        declaration: bool,
        top_level: bool,
        size: u32,
        alignment: u32,
        members: Vec<Member<'a>>,
    ) -> Class<'a> {
        Class {
            name,
            is_union,
            declaration,
            top_level,
            size,
            members,
            alignment,
            holes: Holes::default(),
            holes_searched: false,
            is_packed: false,
            packed_inferred: false,
            natural_alignment: 0,
            embedded_flexible_array: None,
        }
    }
}

/// pahole's `struct class` hole bookkeeping, with its field widths: the
/// counters wrap as pahole's do.
#[derive(Clone, Copy, Debug, Default)]
pub struct Holes {
    /// How many byte holes the struct has, the one before the first member
    /// included (the `holes: N` of pahole's `/* sum members: ... */` line).
    pub nr_holes: u8,
    /// How many bit holes the struct has: unused bits of a bitfield's storage
    /// unit before the next member (the `bit holes: N` of
    /// `/* sum bitfield members: ... */`).
    pub nr_bit_holes: u8,
    /// Bytes of hole before the first member
    /// (`/* XXX N bytes hole, try to pack */` above it).
    pub pre_hole: u16,
    /// Bits of hole before the first member
    /// (`/* XXX N bits hole, try to pack */` above it).
    pub pre_bit_hole: u8,
    /// Bytes from the end of the last member to the struct's size (pahole's
    /// `/* padding: N */`).
    pub padding: u16,
    /// Unused bits at the end of a trailing bitfield's storage unit (pahole's
    /// `/* bit_padding: N bits */`).
    pub bit_padding: u8,
}

/// pahole's `struct class_member`, after its loader's fixups.
#[derive(Clone, Debug)]
pub struct Member<'a> {
    /// The member's name; `None` for an anonymous struct or union member.
    pub name: Option<&'a str>,
    /// The member's type id.
    pub ty: TypeId,
    /// Offset in bits from the start of the containing struct or union (BTF's
    /// member offset, DW_AT_data_bit_offset, or 8 ×
    /// DW_AT_data_member_location).
    pub bit_offset: u32,
    /// Size in bits of the member's type, 8 × `byte_size`: for a bitfield, its
    /// storage unit's size, not its width (that is `bitfield_size`). 0 until a
    /// loader's fixups set it.
    pub bit_size: u32,
    /// Offset in bytes of the member, or of a bitfield's storage unit, from the
    /// start of the containing struct or union: the offset pahole prints.
    pub byte_offset: u32,
    /// Size in bytes of the member's type, or of a bitfield's storage unit
    /// (`tag__size`): the size pahole prints. 0 until a loader's fixups set it.
    pub byte_size: u64,
    /// Where a bitfield starts in its storage unit at `byte_offset`, in bits
    /// from the unit's first bit: the `:N` after the offset pahole prints. 0
    /// for other members; negative means the unit before (see
    /// [`Member::wrap_negative_bitfield`]). An `int8_t`, as in pahole.
    pub bitfield_offset: i8,
    /// Width in bits of a bitfield (`int x:3` has 3); 0 for a member that is
    /// not one.
    pub bitfield_size: u8,
    /// `__aligned__` value in bytes printed after the member, 0 for none:
    /// DW_AT_alignment from DWARF, guessed by [`infer_alignment`] from BTF
    /// offsets.
    pub alignment: u32,
    /// Bytes of hole after this member, before the next
    /// (`/* XXX N bytes hole, try to pack */`); set by [`Model::find_holes`].
    pub hole: u16,
    /// Bits of hole after this member, before the next
    /// (`/* XXX N bits hole, try to pack */`); set by [`Model::find_holes`].
    pub bit_hole: u8,
}

impl Member<'_> {
    /// `bit_offset` from `byte_offset` and the bitfield offset in it.
    pub fn sync_bit_offset(&mut self) {
        self.bit_offset = self
            .byte_offset
            .wrapping_mul(8)
            .wrapping_add(self.bitfield_offset as i32 as u32);
    }

    /// A bitfield offset that came out negative lies in the storage unit
    /// (`byte_size` bytes) before: both of pahole's loaders move it there.
    pub fn wrap_negative_bitfield(&mut self) {
        if self.bitfield_offset < 0 {
            self.bitfield_offset = (self.bitfield_offset as i32 + self.bit_size as i32) as i8;
            self.byte_offset = self.byte_offset.wrapping_sub(self.byte_size as u32);
            self.sync_bit_offset();
        }
    }
}

/// pahole's view of every type of one BTF object (or of what a DWARF loader
/// read), by type id, with the state pahole's guesses leave behind (see the
/// module doc).
pub struct Model<'a> {
    /// One node per type id: index 0 (`void`) and the kinds pahole does not
    /// load (DATASEC, DECL_TAG, TYPE_TAG, ...) are `None`.
    pub nodes: Vec<Option<Node<'a>>>,
    /// The size of a pointer in bytes ([`Model::new`] takes 8).
    pub addr_size: u32,
}

fn name(btf: &Btf, off: u32) -> Option<&str> {
    if off == 0 {
        return None;
    }
    btf.str_at(off).ok()
}

impl<'a> Model<'a> {
    /// Types a loader made; member offsets and sizes already final.
    pub fn from_nodes(nodes: Vec<Option<Node<'a>>>, addr_size: u32) -> Model<'a> {
        Model { nodes, addr_size }
    }

    /// Builds pahole's view of every type of `btf` (its base's included,
    /// as pahole's BTF loader does) and applies the loader's member fixups,
    /// guessing alignments as pahole does for BTF (which has none).
    pub fn new(btf: &'a Btf, cacheline: u32) -> Model<'a> {
        let count = btf.type_count() as usize;
        let mut nodes = Vec::with_capacity(count);
        nodes.push(None);
        for id in 1..count as TypeId {
            nodes.push(btf.type_by_id(id).and_then(|t| node(btf, t)));
        }
        let mut model = Model {
            nodes,
            addr_size: 8,
        };
        for id in 1..count as TypeId {
            model.fixup_members(id, cacheline);
        }
        model
    }

    /// The node of type `id`; `None` for `void`, an id out of range or a kind
    /// pahole does not load.
    pub fn get(&self, id: TypeId) -> Option<&Node<'a>> {
        self.nodes.get(id as usize)?.as_ref()
    }

    /// The struct or union (or forward declaration of one) `id`, if it is one.
    pub fn class(&self, id: TypeId) -> Option<&Class<'a>> {
        match self.get(id)? {
            Node::Class(c) => Some(c),
            _ => None,
        }
    }

    /// The struct or union `id`, to change it (a loader's fixups).
    pub fn class_mut(&mut self, id: TypeId) -> Option<&mut Class<'a>> {
        match self.nodes.get_mut(id as usize)?.as_mut()? {
            Node::Class(c) => Some(c),
            _ => None,
        }
    }

    /// Whether `id` itself (no typedef followed) is a struct or a forward
    /// declaration of one.
    pub fn is_struct(&self, id: TypeId) -> bool {
        self.class(id).is_some_and(|c| !c.is_union)
    }

    /// Whether `id` itself (no typedef followed) is a union or a forward
    /// declaration of one.
    pub fn is_union(&self, id: TypeId) -> bool {
        self.class(id).is_some_and(|c| c.is_union)
    }

    /// Whether `id` itself (no typedef followed) is an enum.
    pub fn is_enum(&self, id: TypeId) -> bool {
        matches!(self.get(id), Some(Node::Enum { .. }))
    }

    /// The name of a struct, union or enum type (`type__name`).
    pub fn type_name(&self, id: TypeId) -> Option<&'a str> {
        match self.get(id)? {
            Node::Class(c) => c.name,
            Node::Enum { name, .. } | Node::Typedef { name, .. } => *name,
            _ => None,
        }
    }

    /// The type a modifier, typedef, pointer or array refers to (`tag->type`).
    pub fn target(&self, id: TypeId) -> TypeId {
        match self.get(id) {
            Some(
                Node::Pointer(t)
                | Node::Const(t)
                | Node::Volatile(t)
                | Node::Restrict(t)
                | Node::Typedef { ty: t, .. },
            ) => *t,
            Some(Node::Array { elem, .. }) => *elem,
            Some(Node::FuncProto { ret, .. }) => *ret,
            _ => 0,
        }
    }

    /// `tag__strip_typedefs_and_modifiers`, from a type id: the first type
    /// that is not a typedef or qualifier; `None` where pahole finds no type.
    pub fn strip(&self, mut id: TypeId) -> Option<TypeId> {
        // A cycle can only come from bad input; pahole would loop forever.
        for _ in 0..256 {
            match self.get(id)? {
                Node::Typedef { ty, .. }
                | Node::Const(ty)
                | Node::Volatile(ty)
                | Node::Restrict(ty) => id = *ty,
                _ => return Some(id),
            }
        }
        None
    }

    /// `tag__size`.
    pub fn size(&self, id: TypeId) -> u64 {
        self.size_depth(id, 0)
    }

    fn size_depth(&self, id: TypeId, depth: u32) -> u64 {
        if depth > 256 {
            return u64::MAX;
        }
        let Some(node) = self.get(id) else {
            return u64::MAX;
        };
        match node {
            Node::Pointer(_) => self.addr_size as u64,
            Node::Base { bits, .. } => (bits / 8) as u64,
            Node::Enum { bits, .. } => (bits / 8) as u64,
            Node::Class(c) => {
                // pahole's "empty base optimization trick".
                if c.size == 1 && c.members.is_empty() {
                    0
                } else {
                    c.size as u64
                }
            }
            Node::Array { elem, dims } => {
                let s = if *elem == 0 {
                    0
                } else {
                    self.size_depth(*elem, depth + 1)
                };
                dims.iter().fold(s, |acc, &n| acc.wrapping_mul(n as u64))
            }
            Node::Const(t)
            | Node::Volatile(t)
            | Node::Restrict(t)
            | Node::Typedef { ty: t, .. }
            | Node::FuncProto { ret: t, .. } => {
                if *t == 0 {
                    0
                } else {
                    self.size_depth(*t, depth + 1)
                }
            }
            Node::Func { .. } | Node::Variable { .. } => 0,
        }
    }

    /// `tag__natural_alignment`.
    pub fn natural_alignment(&mut self, id: Option<TypeId>) -> u32 {
        self.natural_alignment_depth(id, 0)
    }

    fn natural_alignment_depth(&mut self, id: Option<TypeId>, depth: u32) -> u32 {
        let Some(id) = id else { return 1 };
        if depth > 64 {
            return 1;
        }
        let a = match self.get(id) {
            None => 1,
            Some(Node::Pointer(_)) => self.addr_size,
            Some(Node::Base { bits, .. }) => bits / 8,
            Some(Node::Enum { bits, .. }) => bits / 8,
            Some(Node::Class(_)) => self.type_natural_alignment(id, depth),
            Some(Node::Array { elem, .. }) => {
                let elem = self.strip(*elem);
                match elem {
                    Some(e) => self.natural_alignment_depth(Some(e), depth + 1),
                    None => 1,
                }
            }
            Some(_) => 1,
        };
        a.max(1)
    }

    fn type_natural_alignment(&mut self, id: TypeId, depth: u32) -> u32 {
        let Some(c) = self.class(id) else { return 0 };
        if c.natural_alignment != 0 {
            return c.natural_alignment;
        }
        let tys: Vec<TypeId> = c.members.iter().map(|m| m.ty).collect();
        let mut max = 0;
        for ty in tys {
            let Some(t) = self.strip(ty) else { continue };
            let a = self.natural_alignment_depth(Some(t), depth + 1);
            max = max.max(a);
        }
        // pahole keeps it in a u16.
        let max = max & 0xffff;
        if let Some(c) = self.class_mut(id) {
            c.natural_alignment = max;
        }
        max
    }

    /// pahole's BTF loader fixup (`class__fixup_btf_bitfields`): member
    /// sizes from their types, bitfield storage units, and the alignments.
    fn fixup_members(&mut self, id: TypeId, cacheline: u32) {
        let Some(c) = self.class(id) else { return };
        if c.declaration {
            return;
        }
        let n = c.members.len();
        let mut smallest_offset = 0u32;
        for i in 0..n {
            let Some(ty) = self.class(id).and_then(|c| c.members.get(i)).map(|m| m.ty) else {
                continue;
            };
            let Some(t) = self.strip(ty) else { continue };
            let byte_size = self.size(t);
            let is_scalar = matches!(self.get(t), Some(Node::Base { .. } | Node::Enum { .. }));
            let natural = self.natural_alignment(Some(t));
            let Some(m) = self.class_mut(id).and_then(|c| c.members.get_mut(i)) else {
                continue;
            };
            m.bitfield_offset = 0;
            m.byte_size = byte_size;
            m.bit_size = (byte_size as u32).wrapping_mul(8);
            // A flexible or zero-length array: no bitfield to fix up, but
            // its offset says how it was aligned (pahole 1.31 on).
            if byte_size == 0 {
                m.alignment = infer_alignment(cacheline, m.byte_offset, natural, smallest_offset);
                continue;
            }
            if is_scalar {
                if m.bitfield_size != 0 && m.bit_size != 0 {
                    m.byte_offset = m.bit_offset / m.bit_size * m.bit_size / 8;
                    let bfo = m.bit_offset.wrapping_sub(m.byte_offset.wrapping_mul(8)) as i32;
                    // pahole stores it in an int8_t.
                    m.bitfield_offset = bfo as i8;
                    m.wrap_negative_bitfield();
                } else {
                    m.byte_offset = m.bit_offset / 8;
                }
            }
            m.alignment = infer_alignment(cacheline, m.byte_offset, natural, smallest_offset);
            // A bitfield ends at its last bit, not at the end of its
            // storage unit: the rest may be a hole (pahole 1.31 on).
            let used = if m.bitfield_size != 0 {
                ((m.bitfield_offset as i32 + m.bitfield_size as i32 + 7) / 8) as u32
            } else {
                byte_size as u32
            };
            smallest_offset = m.byte_offset.wrapping_add(used);
        }
        let size = self.class(id).map_or(0, |c| c.size);
        let natural = self.natural_alignment(Some(id));
        let alignment = infer_alignment(cacheline, size, natural, smallest_offset);
        if let Some(c) = self.class_mut(id) {
            c.alignment = alignment;
        }
    }

    /// `class__find_holes`: byte and bit holes after each member, before
    /// the first, and the padding at the end. Structs only; once per type.
    ///
    /// Invariant: `last_seen_bit` is the first bit after what the members
    /// seen so far cover; a bitfield run may extend the covered range to
    /// the end of its storage unit (`cur_bitfield_end`) so that the unused
    /// bits of a unit count as a bit hole, not a byte hole.
    pub fn find_holes(&mut self, id: TypeId) {
        let Some(c) = self.class_mut(id) else { return };
        if c.is_union || c.holes_searched {
            return;
        }
        let size_bits = c.size.wrapping_mul(8);
        let mut cur_bitfield_end = size_bits;
        let mut cur_bitfield_size = 0u32;
        let mut last_seen_bit = 0u32;
        let mut in_bitfield = false;
        let mut h = Holes::default();
        let mut last: Option<usize> = None;
        for i in 0..c.members.len() {
            let m = &mut c.members[i];
            m.bit_hole = 0;
            m.hole = 0;
            let bit_start = m.bit_offset;
            let bit_end = if m.bitfield_size != 0 {
                bit_start.wrapping_add(m.bitfield_size as u32)
            } else {
                bit_start.wrapping_add((m.byte_size as u32).wrapping_mul(8))
            };
            let mut bit_holes: i32 = 0;
            let mut byte_holes: i32 = 0;
            if in_bitfield {
                let bitfield_end = bit_start.min(cur_bitfield_end);
                bit_holes = bitfield_end.wrapping_sub(last_seen_bit) as i32;
                last_seen_bit = bitfield_end;
            }
            if m.bitfield_size != 0 {
                let aligned_start = m.byte_offset.wrapping_mul(8);
                if last_seen_bit < aligned_start && aligned_start <= bit_start {
                    byte_holes = m.byte_offset.wrapping_sub(last_seen_bit / 8) as i32;
                    last_seen_bit = aligned_start;
                }
                bit_holes = bit_holes.wrapping_add(bit_start.wrapping_sub(last_seen_bit) as i32);
            } else {
                byte_holes = (bit_start / 8).wrapping_sub(last_seen_bit / 8) as i32;
            }
            last_seen_bit = bit_end;
            if m.bitfield_size != 0 {
                in_bitfield = true;
                if bit_end > cur_bitfield_end || m.bit_size > cur_bitfield_size {
                    cur_bitfield_size = m.bit_size;
                    cur_bitfield_end = m
                        .byte_offset
                        .wrapping_mul(8)
                        .wrapping_add(cur_bitfield_size);
                    if bit_end > cur_bitfield_end {
                        cur_bitfield_end = cur_bitfield_end.wrapping_add(cur_bitfield_size);
                    }
                }
            } else {
                in_bitfield = false;
                cur_bitfield_size = 0;
                cur_bitfield_end = bit_end;
            }
            match last {
                Some(l) => {
                    c.members[l].hole = byte_holes as u16;
                    c.members[l].bit_hole = bit_holes as u8;
                }
                None => {
                    h.pre_hole = byte_holes as u16;
                    h.pre_bit_hole = bit_holes as u8;
                }
            }
            if bit_holes != 0 {
                h.nr_bit_holes = h.nr_bit_holes.wrapping_add(1);
            }
            if byte_holes != 0 {
                h.nr_holes = h.nr_holes.wrapping_add(1);
            }
            last = Some(i);
        }
        if in_bitfield {
            let bitfield_end = size_bits.min(cur_bitfield_end);
            h.bit_padding = bitfield_end.wrapping_sub(last_seen_bit) as u8;
            last_seen_bit = bitfield_end;
        }
        h.padding = c.size.wrapping_sub(last_seen_bit / 8) as u16;
        c.holes = h;
        c.holes_searched = true;
    }

    /// `class__infer_packed_attributes`: whether a struct must have been
    /// `__packed__` — no holes or padding, yet a member at an offset its
    /// alignment forbids, or a size its alignment does not divide.
    pub fn infer_packed(&mut self, id: TypeId) -> bool {
        match self.class(id) {
            Some(c) if !c.is_union => {
                if c.packed_inferred {
                    return c.is_packed;
                }
            }
            _ => return false,
        }
        self.find_holes(id);
        let Some(c) = self.class(id) else {
            return false;
        };
        let mut packed = c.is_packed;
        if c.holes.padding != 0 || c.holes.nr_holes != 0 {
            self.mark_unnaturally_placed_structs(id);
            packed = false;
        } else {
            let members: Vec<(TypeId, u32)> =
                c.members.iter().map(|m| (m.ty, m.byte_offset)).collect();
            let (size, alignment) = (c.size, c.alignment);
            let mut max_natural = 1u32;
            let mut found = false;
            for (ty, off) in members {
                let t = self.strip(ty);
                let natural = self.natural_alignment(t);
                if natural == 1 {
                    continue;
                }
                max_natural = max_natural.max(natural) & 0xffff;
                if off % natural != 0 {
                    packed = true;
                    found = true;
                    break;
                }
            }
            if !found
                && ((max_natural != 1 && alignment == 1)
                    || (max_natural != 0 && size % max_natural != 0))
            {
                packed = true;
            }
        }
        if let Some(c) = self.class_mut(id) {
            c.is_packed = packed;
            c.packed_inferred = true;
        }
        packed
    }

    /// `type__check_structs_at_unnatural_alignments`: member structs at
    /// an offset their alignment forbids must be packed.
    fn mark_unnaturally_placed_structs(&mut self, id: TypeId) {
        self.mark_misaligned_member_structs(id, |m, _| m.byte_offset);
    }

    /// Marks packed each member struct type whose natural alignment does
    /// not divide `at(member, size of id)`.
    fn mark_misaligned_member_structs(&mut self, id: TypeId, at: impl Fn(&Member, u32) -> u32) {
        let Some(c) = self.class(id) else { return };
        let members: Vec<(TypeId, u32)> = c.members.iter().map(|m| (m.ty, at(m, c.size))).collect();
        for (ty, at) in members {
            let Some(t) = self.strip(ty) else { continue };
            if !self.is_struct(t) {
                continue;
            }
            let natural = self.natural_alignment(Some(t));
            if at % natural != 0 {
                self.mark_packed(t);
            }
        }
    }

    fn mark_packed(&mut self, id: TypeId) {
        if let Some(c) = self.class_mut(id) {
            c.is_packed = true;
            c.packed_inferred = true;
        }
    }

    /// `class__has_flexible_array`: the last member is an array of one
    /// dimension with no elements (its type itself, not through a typedef).
    pub fn has_flexible_array(&self, id: TypeId) -> bool {
        let Some(last) = self.class(id).and_then(|c| c.members.last()) else {
            return false;
        };
        match self.get(last.ty) {
            Some(Node::Array { dims, .. }) => {
                dims.len() <= 1 && dims.first().is_none_or(|&n| n == 0)
            }
            _ => false,
        }
    }

    /// `class__has_embedded_flexible_array`: a struct member (through
    /// typedefs and qualifiers), or one nested in it, ends in a flexible
    /// array.
    pub fn has_embedded_flexible_array(&mut self, id: TypeId) -> bool {
        self.embedded_flexible_array_depth(id, 0)
    }

    fn embedded_flexible_array_depth(&mut self, id: TypeId, depth: u32) -> bool {
        let Some(c) = self.class(id) else {
            return false;
        };
        if c.is_union {
            return false;
        }
        if let Some(known) = c.embedded_flexible_array {
            return known;
        }
        // Structs hold each other by value only in bad input.
        if depth > 64 {
            return false;
        }
        let tys: Vec<TypeId> = c.members.iter().map(|m| m.ty).collect();
        let mut found = false;
        for ty in tys {
            let Some(t) = self.strip(ty).filter(|&t| self.is_struct(t)) else {
                continue;
            };
            found = self.has_flexible_array(t)
                || (t != id && self.embedded_flexible_array_depth(t, depth + 1));
            if found {
                break;
            }
        }
        if let Some(c) = self.class_mut(id) {
            c.embedded_flexible_array = Some(found);
        }
        found
    }

    /// `union__infer_packed_attributes`: a struct in a union whose
    /// alignment does not divide the union's size must be packed.
    pub fn infer_union_packed(&mut self, id: TypeId) {
        if self.class(id).is_none_or(|c| c.packed_inferred) {
            return;
        }
        self.mark_misaligned_member_structs(id, |_, size| size);
        if let Some(c) = self.class_mut(id) {
            c.packed_inferred = true;
        }
    }
}

/// pahole's guess of an `__aligned__` attribute from a gap in the offsets
/// (`class__infer_alignment`): the power of two above the gap, when it
/// exceeds the natural alignment; the cache line size when that is
/// compatible with the offset.
pub fn infer_alignment(
    cacheline: u32,
    byte_offset: u32,
    natural: u32,
    smallest_offset: u32,
) -> u32 {
    let delta = byte_offset.wrapping_sub(smallest_offset);
    let mut alignment = 0u32;
    // A negative gap (union members, bitfields sharing a unit) wraps to a
    // value with the top bit set, for which pahole's shift by 32 yields 0
    // or 1: no alignment either way.
    if delta != 0 && byte_offset % 2 == 0 && delta.leading_zeros() != 0 {
        alignment = 1u32 << (32 - delta.leading_zeros());
    }
    if alignment <= natural || alignment == 1 {
        0
    } else if alignment < cacheline && cacheline % alignment == 0 && byte_offset % cacheline == 0 {
        cacheline
    } else {
        alignment
    }
}

fn node<'a>(btf: &'a Btf, t: &'a btf::Type) -> Option<Node<'a>> {
    let n = name(btf, t.name_off);
    Some(match &t.data {
        TypeData::Int { bits, .. } => Node::Base {
            name: n,
            bits: *bits as u32,
            // pahole's BTF loader stores `encoding & BTF_INT_BOOL` (4) in a
            // one-bit field: it is always 0, so `_Bool` never reads "bool _Bool".
            is_bool: false,
            is_float: false,
        },
        TypeData::Float { size } => Node::Base {
            name: n,
            bits: size.wrapping_mul(8),
            is_bool: false,
            is_float: true,
        },
        TypeData::Ptr { ty } => Node::Pointer(*ty),
        TypeData::Const { ty } => Node::Const(*ty),
        TypeData::Volatile { ty } => Node::Volatile(*ty),
        TypeData::Restrict { ty } => Node::Restrict(*ty),
        TypeData::Typedef { ty } => Node::Typedef { name: n, ty: *ty },
        // pahole 1.32's BTF loader reads an array of arrays as one array of
        // several dimensions, as DWARF has it (`int m[2][3]`, and not a
        // flexible array when the first is 0).
        TypeData::Array(a) => {
            let (mut elem, mut dims) = (a.elem, vec![a.nelems]);
            while let Some(TypeData::Array(inner)) = btf.type_by_id(elem).map(|t| &t.data) {
                // Only bad input nests deeper (or loops).
                if dims.len() > 64 {
                    break;
                }
                dims.push(inner.nelems);
                elem = inner.elem;
            }
            Node::Array { elem, dims }
        }
        TypeData::Struct { size, members } | TypeData::Union { size, members } => {
            let is_union = matches!(t.data, TypeData::Union { .. });
            let members = members
                .iter()
                .map(|m| {
                    let bit_offset = m.bit_offset(t.kind_flag);
                    Member {
                        name: name(btf, m.name_off),
                        ty: m.ty,
                        bit_offset,
                        bit_size: 0,
                        byte_offset: bit_offset / 8,
                        byte_size: 0,
                        bitfield_offset: 0,
                        bitfield_size: m.bitfield_size(t.kind_flag) as u8,
                        alignment: 0,
                        hole: 0,
                        bit_hole: 0,
                    }
                })
                .collect();
            Node::Class(Class::new(n, is_union, false, true, *size, 0, members))
        }
        TypeData::Fwd => Node::Class(Class::new(n, t.kind_flag, true, true, 0, 0, Vec::new())),
        // pahole 1.26 on: kind_flag says the values are signed, and a
        // 32-bit value is sign-extended then.
        TypeData::Enum { size, .. } | TypeData::Enum64 { size, .. } => enumeration(
            n,
            *size,
            t.kind_flag,
            t.enum_values()
                .map(|(name_off, val)| (name(btf, name_off), val)),
        ),
        TypeData::FuncProto { ret, params } => Node::FuncProto {
            ret: *ret,
            unspec: params.iter().any(|p| p.ty == 0),
            params: params
                .iter()
                .filter(|p| p.ty != 0)
                .map(|p| (name(btf, p.name_off), p.ty))
                .collect(),
        },
        TypeData::Func { .. } => Node::Func { name: n },
        TypeData::Var { .. } => Node::Variable { name: n },
        // pahole's BTF loader skips these (and 1.24 knows none of bpf-next's
        // location kinds or kinds read opaque): a reference is "not found".
        TypeData::Datasec { .. }
        | TypeData::DeclTag { .. }
        | TypeData::TypeTag { .. }
        | TypeData::LocParam { .. }
        | TypeData::LocProto { .. }
        | TypeData::Locsec { .. }
        | TypeData::Unknown { .. } => return None,
    })
}

/// An ENUM or ENUM64 as pahole's BTF loader reads it: size in bits (4
/// bytes when BTF says 0), signed as kind_flag says.
fn enumeration<'a>(
    name: Option<&'a str>,
    size: u32,
    signed: bool,
    values: impl Iterator<Item = (Option<&'a str>, u64)>,
) -> Node<'a> {
    Node::Enum {
        name,
        bits: if size == 0 { 32 } else { size.wrapping_mul(8) },
        signed,
        values: values.collect(),
    }
}
