//! `btf_check_all_metas`: what each type must be on its own, one check per
//! kind, as the kernel's `btf_kind_operations` has one `check_meta` per kind.

use super::*;

impl<'a> Validator<'a> {
    fn check_no_kflag(&mut self, id: TypeId, t: &Type) {
        if t.kind_flag {
            self.report(
                id,
                Rule::KindFlag,
                "kind_flag must be 0 for this kind".into(),
            );
        }
    }

    fn check_vlen(&mut self, id: TypeId, len: usize, what: &str) {
        let max = self.target.max_vlen();
        if len > max as usize {
            self.report(
                id,
                Rule::Vlen,
                format!(
                    "{len} {what} exceed {}'s vlen limit of {max}",
                    self.target.name()
                ),
            );
        }
    }

    /// A reference that must not be void and must fit in 20 bits.
    fn check_ref(&mut self, id: TypeId, to: TypeId, what: &dyn fmt::Display) {
        if to == 0 {
            self.report(id, Rule::TypeId, format!("{what} is void"));
        } else if to > BTF_MAX_TYPE {
            self.report(
                id,
                Rule::TypeId,
                format!("{what} type id {to} is above the kernel's limit {BTF_MAX_TYPE}"),
            );
        }
    }

    /// `btf_check_meta` and each kind's `check_meta`: what a type must be on
    /// its own, before looking at the types it refers to.
    pub(super) fn check_meta(&mut self, id: TypeId) {
        let Some(t) = self.ty(id) else { return };
        let name_ok = self.name(t.name_off).is_some();
        if !name_ok {
            self.report(
                id,
                Rule::NameOffset,
                format!(
                    "name offset {:#x} is outside the string section",
                    t.name_off
                ),
            );
        }
        if t.kind() > self.target.max_kind() || matches!(t.data, TypeData::Unknown { .. }) {
            let how = if matches!(t.data, TypeData::Unknown { .. }) {
                " (read through the layout section)"
            } else {
                ""
            };
            self.report(
                id,
                Rule::Kind,
                format!(
                    "kind {}{how} is unknown to {}",
                    t.kind(),
                    self.target.name()
                ),
            );
            return;
        }
        match &t.data {
            TypeData::Int {
                size,
                encoding,
                offset,
                bits,
            } => self.check_int_meta(id, t, *size, *encoding, *offset, *bits),
            TypeData::Array(a) => self.check_array_meta(id, t, a),
            TypeData::Struct { size, members } | TypeData::Union { size, members } => {
                self.check_struct_meta(id, t, *size, members, name_ok)
            }
            TypeData::Enum { size, values } => {
                self.check_enum_meta(
                    id,
                    t,
                    *size,
                    values.len(),
                    values.iter().map(|v| v.name_off),
                );
            }
            TypeData::Enum64 { size, values } => {
                self.check_enum_meta(
                    id,
                    t,
                    *size,
                    values.len(),
                    values.iter().map(|v| v.name_off),
                );
            }
            TypeData::Fwd => {
                if name_ok {
                    self.check_ident(id, t.name_off, false, &"forward declaration");
                }
            }
            TypeData::Func { linkage, .. } => self.check_func_meta(id, t, *linkage, name_ok),
            TypeData::FuncProto { params, .. } => {
                self.check_anon(id, t);
                self.check_no_kflag(id, t);
                self.check_vlen(id, params.len(), "parameters");
            }
            TypeData::Var { ty, linkage } => self.check_var_meta(id, t, *ty, *linkage, name_ok),
            TypeData::Datasec { size, vars } => {
                self.check_datasec_meta(id, t, *size, vars, name_ok)
            }
            TypeData::Float { size } => self.check_float_meta(id, t, *size),
            TypeData::DeclTag { component_idx, .. } => {
                self.check_decl_tag_meta(id, t, *component_idx, name_ok)
            }
            TypeData::LocParam { .. } | TypeData::LocProto { .. } | TypeData::Locsec { .. } => {
                self.check_location_meta(id, t, name_ok)
            }
            // The references (PTR, TYPEDEF, the modifiers) alike; a kind
            // this crate does not know was reported above: no kernel knows
            // one.
            _ => {
                if let Some(ty) = t.ref_type_in(Kind::is_reference) {
                    self.check_ref_kind_meta(id, t, ty, name_ok);
                }
            }
        }
    }

    /// The location kinds (bpf-next): what a LOC_PARAM, a LOC_PROTO or a
    /// LOCSEC must be on its own.
    fn check_location_meta(&mut self, id: TypeId, t: &Type, name_ok: bool) {
        match &t.data {
            TypeData::LocParam {
                size,
                flags,
                values,
            } => {
                self.check_anon(id, t);
                self.check_no_kflag(id, t);
                self.check_loc_param(id, *size, *flags, values.len());
            }
            TypeData::LocProto { params } => {
                self.check_anon(id, t);
                self.check_no_kflag(id, t);
                self.check_vlen(id, params.len(), "parameters");
            }
            TypeData::Locsec { locs } => {
                self.check_no_kflag(id, t);
                if name_ok {
                    self.check_section_name(id, t.name_off);
                }
                self.check_vlen(id, locs.len(), "inline sites");
            }
            _ => {}
        }
    }

    fn check_int_meta(
        &mut self,
        id: TypeId,
        t: &Type,
        size: u32,
        encoding: u8,
        offset: u8,
        bits: u8,
    ) {
        self.check_no_kflag(id, t);
        let nr_bits = bits as u32 + offset as u32;
        if nr_bits > BITS_PER_U128 {
            self.report(
                id,
                Rule::Int,
                format!("bits {bits} + bit offset {offset} exceed {BITS_PER_U128}"),
            );
        } else if nr_bits.div_ceil(8) > size {
            self.report(
                id,
                Rule::Int,
                format!("bits {bits} + bit offset {offset} don't fit in size {size}"),
            );
        }
        if !matches!(encoding, 0 | BTF_INT_SIGNED | BTF_INT_CHAR | BTF_INT_BOOL) {
            self.report(
                id,
                Rule::Int,
                format!("encoding {encoding:#x} is not one of none, SIGNED, CHAR, BOOL"),
            );
        }
    }

    /// PTR, the modifiers, TYPEDEF and TYPE_TAG: one type id, and a name
    /// only for TYPEDEF and TYPE_TAG.
    fn check_ref_kind_meta(&mut self, id: TypeId, t: &Type, ty: TypeId, name_ok: bool) {
        // TYPE_TAG's kind_flag marks an attribute (`__attribute__((...))`).
        if t.kind() != BTF_KIND_TYPE_TAG {
            self.check_no_kflag(id, t);
        }
        if ty > BTF_MAX_TYPE {
            self.report(
                id,
                Rule::TypeId,
                format!("type id {ty} is above the kernel's limit {BTF_MAX_TYPE}"),
            );
        }
        match t.kind() {
            BTF_KIND_TYPEDEF if name_ok => self.check_ident(id, t.name_off, false, &"typedef"),
            BTF_KIND_TYPE_TAG if name_ok => {
                if self.name(t.name_off).is_some_and(<[u8]>::is_empty) {
                    self.report(id, Rule::Name, "type tag needs a value".into());
                }
            }
            BTF_KIND_TYPEDEF | BTF_KIND_TYPE_TAG => {}
            _ => self.check_anon(id, t),
        }
    }

    fn check_array_meta(&mut self, id: TypeId, t: &Type, a: &Array) {
        self.check_anon(id, t);
        self.check_no_kflag(id, t);
        self.check_ref(id, a.elem, &"element type");
        self.check_ref(id, a.index, &"index type");
    }

    /// STRUCT and UNION.
    fn check_struct_meta(
        &mut self,
        id: TypeId,
        t: &Type,
        size: u32,
        members: &[Member],
        name_ok: bool,
    ) {
        if name_ok {
            self.check_ident(id, t.name_off, true, &"type");
        }
        self.check_vlen(id, members.len(), "members");
        self.check_members_meta(id, t, size, members);
    }

    fn check_func_meta(&mut self, id: TypeId, t: &Type, linkage: u32, name_ok: bool) {
        if name_ok {
            self.check_ident(id, t.name_off, false, &"function");
        }
        if linkage > BTF_FUNC_GLOBAL {
            let what = if linkage == BTF_FUNC_EXTERN {
                " (extern)"
            } else {
                ""
            };
            self.report(
                id,
                Rule::Linkage,
                format!("linkage {linkage}{what} is not static (0) or global (1)"),
            );
        }
        self.check_no_kflag(id, t);
    }

    fn check_var_meta(&mut self, id: TypeId, t: &Type, ty: TypeId, linkage: u32, name_ok: bool) {
        self.check_no_kflag(id, t);
        if name_ok {
            self.check_ident(id, t.name_off, false, &"variable");
        }
        self.check_ref(id, ty, &"type");
        if linkage != BTF_VAR_STATIC && linkage != BTF_VAR_GLOBAL_ALLOCATED {
            self.report(
                id,
                Rule::Linkage,
                format!("linkage {linkage} is not static (0) or global allocated (1)"),
            );
        }
    }

    fn check_datasec_meta(
        &mut self,
        id: TypeId,
        t: &Type,
        size: u32,
        vars: &[VarSecinfo],
        name_ok: bool,
    ) {
        if size == 0 {
            self.report(id, Rule::Size, "size is 0".into());
        }
        self.check_no_kflag(id, t);
        if name_ok {
            self.check_section_name(id, t.name_off);
        }
        self.check_vlen(id, vars.len(), "entries");
        self.check_datasec_entries(id, size, vars);
    }

    fn check_float_meta(&mut self, id: TypeId, t: &Type, size: u32) {
        self.check_no_kflag(id, t);
        if !matches!(size, 2 | 4 | 8 | 12 | 16) {
            self.report(
                id,
                Rule::Size,
                format!("size {size} is not 2, 4, 8, 12 or 16"),
            );
        }
    }

    fn check_decl_tag_meta(&mut self, id: TypeId, t: &Type, component_idx: i32, name_ok: bool) {
        // DECL_TAG's kind_flag marks an attribute, like TYPE_TAG's.
        if name_ok && self.name(t.name_off).is_some_and(<[u8]>::is_empty) {
            self.report(id, Rule::Name, "decl tag needs a value".into());
        }
        if component_idx < -1 {
            self.report(
                id,
                Rule::DeclTag,
                format!("component_idx {component_idx} is below -1"),
            );
        }
    }

    fn check_enum_meta(
        &mut self,
        id: TypeId,
        t: &Type,
        size: u32,
        len: usize,
        names: impl Iterator<Item = u32>,
    ) {
        if size > 8 || !size.is_power_of_two() {
            self.report(id, Rule::Size, format!("size {size} is not 1, 2, 4 or 8"));
        }
        if self.name(t.name_off).is_some() {
            self.check_ident(id, t.name_off, true, &"type");
        }
        self.check_vlen(id, len, "values");
        for (i, off) in names.enumerate() {
            self.check_ident(id, off, false, &format_args!("value #{i}"));
        }
    }

    /// "member 'name'" or "member #i", for messages: made only when one is
    /// printed (formatting one for every member of every type was most of
    /// a module's encode).
    pub(super) fn member_label(&self, i: usize, m: &Member) -> MemberLabel<'a> {
        MemberLabel {
            i,
            name: self.name(m.name_off).filter(|s| !s.is_empty()),
        }
    }

    fn check_members_meta(&mut self, id: TypeId, t: &Type, size: u32, members: &[Member]) {
        let is_union = t.kind() == BTF_KIND_UNION;
        let mut last_offset = 0;
        for (i, m) in members.iter().enumerate() {
            let label = self.member_label(i, m);
            self.check_ident(id, m.name_off, true, &label);
            self.check_ref(id, m.ty, &format_args!("type of {label}"));
            let off = m.bit_offset(t.kind_flag);
            if is_union && off != 0 {
                self.report(
                    id,
                    Rule::Member,
                    format!("{label} of a union has bit offset {off}, not 0"),
                );
            }
            // ">" rather than ">=": a flexible array member shares the offset
            // of what follows it, and zero-sized members exist.
            if last_offset > off {
                self.report(
                    id,
                    Rule::Member,
                    format!(
                        "{label} bit offset {off} is before the previous member's {last_offset}"
                    ),
                );
            }
            if off.div_ceil(8) > size {
                self.report(
                    id,
                    Rule::Member,
                    format!("{label} bit offset {off} is past the struct size {size}"),
                );
            }
            last_offset = off;
        }
    }

    fn check_datasec_entries(&mut self, id: TypeId, size: u32, vars: &[VarSecinfo]) {
        let mut last_end = 0u64;
        let mut sum = 0u64;
        for (i, v) in vars.iter().enumerate() {
            self.check_ref(id, v.ty, &format_args!("entry #{i}"));
            if (v.offset as u64) < last_end {
                self.report(
                    id,
                    Rule::Datasec,
                    format!(
                        "entry #{i} at offset {} overlaps or precedes the previous entry ending at {last_end}",
                        v.offset
                    ),
                );
            } else if v.offset >= size {
                self.report(
                    id,
                    Rule::Datasec,
                    format!(
                        "entry #{i} offset {} is past the section size {size}",
                        v.offset
                    ),
                );
            }
            if v.size == 0 || v.size > size {
                self.report(
                    id,
                    Rule::Datasec,
                    format!(
                        "entry #{i} size {} is 0 or larger than the section ({size})",
                        v.size
                    ),
                );
            }
            last_end = v.offset as u64 + v.size as u64;
            if last_end > size as u64 {
                self.report(
                    id,
                    Rule::Datasec,
                    format!(
                        "entry #{i} offset {} + size {} ends past the section size {size}",
                        v.offset, v.size
                    ),
                );
            }
            sum += v.size as u64;
        }
        if sum > size as u64 {
            self.report(
                id,
                Rule::Datasec,
                format!("entries add up to {sum} bytes, more than the section size {size}"),
            );
        }
    }
}

/// [`Validator::member_label`]'s label.
pub(super) struct MemberLabel<'a> {
    i: usize,
    name: Option<&'a [u8]>,
}

impl fmt::Display for MemberLabel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name {
            Some(s) => write!(f, "member '{}'", String::from_utf8_lossy(s)),
            None => write!(f, "member #{}", self.i),
        }
    }
}
